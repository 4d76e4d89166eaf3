"""The SSML subset: markup to a flat list of text runs and pauses.

Parsing is streaming (expat through defusedxml) with DTDs, entity
declarations and external references forbidden, and with bounds on size,
nesting depth, element count, attribute length, total silence and time, so a
hostile document costs a few milliseconds and a clear 400, never a hung
worker. Unsupported elements are not errors: their text content is spoken
and the markup never is.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser, ParseError

from .errors import TextError
from .normalize import primary_language, say_as
from .sentences import PARAGRAPH_PAUSE_MS

MAX_SSML_CHARS = 200_000
MAX_DEPTH = 32
MAX_ELEMENTS = 10_000
MAX_ATTRIBUTE_CHARS = 1_000
MAX_BREAK_MS = 10_000
#: A <say-as> reading multiplies its content; longer content is read as plain text (docs/limits.md).
SAY_AS_MAX_CHARS = 64
MAX_TOTAL_PAUSE_MS = 600_000
# Parsing is linear in the (bounded) input; this only guards a starved CPU.
MAX_PARSE_SECONDS = 2.0

SSML_NAMESPACE = "http://www.w3.org/2001/10/synthesis"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

# Multipliers of the voice's normal speed.
RATE_LABELS = {"x-slow": 0.6, "slow": 0.8, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
MIN_RATE, MAX_RATE = 0.25, 4.0
BREAK_STRENGTHS = {"none": 0, "x-weak": 100, "weak": 250, "medium": 500, "strong": 800, "x-strong": 1200}

# An XML declaration or DOCTYPE also counts: such text is markup, and it must
# be refused as SSML rather than read aloud character by character.
_SSML_START = re.compile(r"\s*(?:<speak[\s>/]|<\?xml[\s?]|<!DOCTYPE\s)", re.IGNORECASE)
_TIME = re.compile(r"\s*(\d{1,7}(?:\.\d+)?)\s*(ms|s)\s*")
_RATE_NUMBER = re.compile(r"\s*([+-])?(\d{1,4}(?:\.\d+)?)\s*(%)?\s*")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Run:
    """Text to speak at ``rate``; ``normalize`` is False when it already is
    the spoken form (``say-as``, ``sub``, ``phoneme`` output)."""

    text: str
    rate: float = 1.0
    normalize: bool = True


@dataclass(frozen=True)
class Pause:
    """A segment boundary followed by ``ms`` of silence.

    ``kind`` is "break", "sentence" or "paragraph"; a paragraph's pause at the
    very end of the document is dropped, an explicit break never is.
    """

    ms: int
    kind: str = "break"


@dataclass
class SsmlDocument:
    items: list[Run | Pause] = field(default_factory=list)
    language: str | None = None


def is_ssml(text: str) -> bool:
    """True when ``text`` is an SSML document (starts with ``<speak``, an XML
    declaration or a DOCTYPE)."""
    return _SSML_START.match(text) is not None


@dataclass
class _Frame:
    tag: str
    rate: float
    # "speak": text is spoken; "collect": text gathered for say-as;
    # "silent": text ignored (sub/phoneme content replaced, break content).
    mode: str = "speak"
    interpret_as: str = ""
    fmt: str | None = None
    buffer: list[str] = field(default_factory=list)


class _Builder:
    """Expat target: turns start/end/data events into runs and pauses."""

    def __init__(self, language: str | None, fallback_language: str | None, deadline: float) -> None:
        self.parser: DefusedXMLParser | None = None
        self.document = SsmlDocument()
        self.stack: list[_Frame] = []
        self.elements = 0
        self.total_pause_ms = 0
        self.language = language
        self.fallback_language = fallback_language
        self.deadline = deadline

    # Positions -------------------------------------------------------------

    def error(self, message: str) -> TextError:
        assert self.parser is not None
        expat = self.parser.parser
        return invalid_ssml(message, expat.CurrentLineNumber, expat.CurrentColumnNumber + 1)

    # Output ----------------------------------------------------------------

    def _emit_text(self, text: str, rate: float, normalize: bool = True) -> None:
        if text:
            self.document.items.append(Run(text, rate, normalize))

    def _emit_pause(self, ms: int, kind: str) -> None:
        # Only explicit breaks count: paragraph pauses grow with the content.
        self.total_pause_ms += ms if kind == "break" else 0
        if self.total_pause_ms > MAX_TOTAL_PAUSE_MS:
            raise self.error(f"more than {MAX_TOTAL_PAUSE_MS // 1000} seconds of breaks in one request")
        self.document.items.append(Pause(ms, kind))

    # Attribute values ------------------------------------------------------

    def _break_ms(self, attrib: dict[str, str]) -> int:
        if "time" in attrib:
            found = _TIME.fullmatch(attrib["time"])
            if found is None:
                raise self.error(f'<break time="{attrib["time"][:40]}"> is not a time like "500ms" or "1.5s"')
            value = float(found.group(1)) * (1 if found.group(2) == "ms" else 1000)
            return min(round(value), MAX_BREAK_MS)
        strength = attrib.get("strength", "medium")
        if strength not in BREAK_STRENGTHS:
            raise self.error(f"<break strength> must be one of {', '.join(BREAK_STRENGTHS)}")
        return BREAK_STRENGTHS[strength]

    def _rate(self, value: str, parent: float) -> float:
        value = value.strip()
        if value in RATE_LABELS:
            rate = RATE_LABELS[value]
        else:
            found = _RATE_NUMBER.fullmatch(value)
            if found is None:
                raise self.error(f'<prosody rate="{value[:40]}"> is not a label, a percentage or a number')
            sign, number, percent = found.groups()
            amount = float(number) / 100 if percent else float(number)
            if sign:
                # "+20%" is relative to the enclosing rate; "120%" is absolute.
                delta = amount if percent else amount / 100
                rate = parent * (1 + delta if sign == "+" else 1 - delta)
            else:
                rate = amount
        return min(max(rate, MIN_RATE), MAX_RATE)

    # Expat events ----------------------------------------------------------

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise self.error(f"more than {MAX_ELEMENTS} elements")
        if len(self.stack) >= MAX_DEPTH:
            raise self.error(f"elements nested deeper than {MAX_DEPTH}")
        if self.elements % 256 == 0 and time.monotonic() > self.deadline:
            raise self.error("document took too long to parse")
        for name, value in attrib.items():
            if len(value) > MAX_ATTRIBUTE_CHARS:
                raise self.error(f"attribute {name.rsplit('}', 1)[-1]} is longer than {MAX_ATTRIBUTE_CHARS} characters")
        namespace, _, local = tag[1:].rpartition("}") if tag.startswith("{") else ("", "", tag)
        if namespace not in ("", SSML_NAMESPACE):
            local = ""  # an element from another vocabulary: only its text counts
        parent = self.stack[-1] if self.stack else None
        if parent is None:
            if local != "speak":
                raise self.error(f"the root element must be <speak>, not <{tag}>")
            # The request's language wins over the document's xml:lang.
            declared = primary_language(attrib.get(_XML_LANG))
            self.document.language = self.language or declared or self.fallback_language
            self.stack.append(_Frame("speak", 1.0))
            return
        frame = _Frame(local, parent.rate, parent.mode if parent.mode != "speak" else "speak")
        self.stack.append(frame)
        if parent.mode != "speak":
            return  # markup inside say-as/sub/phoneme: content only, as its parent decides
        self._open(frame, local, attrib)

    def _open(self, frame: _Frame, local: str, attrib: dict[str, str]) -> None:
        if local == "break":
            frame.mode = "silent"
            self._emit_pause(self._break_ms(attrib), "break")
        elif local == "prosody":
            if "rate" in attrib:
                frame.rate = self._rate(attrib["rate"], frame.rate)
        elif local == "say-as":
            if not attrib.get("interpret-as"):
                raise self.error("<say-as> needs an interpret-as attribute")
            frame.mode = "collect"
            frame.interpret_as = attrib["interpret-as"]
            frame.fmt = attrib.get("format") or attrib.get("detail")
        elif local == "sub":
            if "alias" not in attrib:
                raise self.error("<sub> needs an alias attribute")
            frame.mode = "silent"
            # Angle brackets in an alias are never spoken: they could only read out markup.
            alias = attrib["alias"].replace("<", " ").replace(">", " ")
            self._emit_text(_SPACES.sub(" ", alias), frame.rate, normalize=False)
        elif local == "phoneme":
            self._open_phoneme(frame, attrib)
        elif local in ("p", "paragraph", "s", "sentence"):
            # Text before a paragraph or sentence never runs on into it.
            self._emit_pause(0, "sentence")

    def _open_phoneme(self, frame: _Frame, attrib: dict[str, str]) -> None:
        ph = attrib.get("ph")
        if ph is None:
            raise self.error("<phoneme> needs a ph attribute")
        if attrib.get("alphabet", "ipa").lower() != "ipa":
            return  # x-sampa and friends are not supported: the content is read instead
        if "[" in ph or "]" in ph:
            raise self.error("<phoneme ph> must not contain [ or ]")
        frame.mode = "silent"
        self._emit_text("[[ " + _SPACES.sub(" ", ph).strip() + " ]]", frame.rate, normalize=False)

    def data(self, text: str) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is None or frame.mode == "silent":
            return
        if frame.mode == "collect":
            frame.buffer.append(text)
        else:
            self._emit_text(_SPACES.sub(" ", text), frame.rate)

    def end(self, tag: str) -> None:
        frame = self.stack.pop()
        parent = self.stack[-1] if self.stack else None
        if frame.mode == "collect" and (parent is None or parent.mode == "speak"):
            self._close_say_as(frame)
        elif frame.mode == "collect" and parent is not None and parent.mode == "collect":
            parent.buffer.extend(frame.buffer)
        elif parent is not None and parent.mode == "speak":
            if frame.tag in ("p", "paragraph"):
                self._emit_pause(PARAGRAPH_PAUSE_MS, "paragraph")
            elif frame.tag in ("s", "sentence"):
                self._emit_pause(0, "sentence")

    def _close_say_as(self, frame: _Frame) -> None:
        content = _SPACES.sub(" ", "".join(frame.buffer))
        if not content.strip():
            return
        if len(content.strip()) > SAY_AS_MAX_CHARS:
            # A reading multiplies its content (a letter's name is several letters): longer content is
            # read as plain text, so the words spoken stay within a factor of the characters billed.
            self._emit_text(content, frame.rate)
            return
        reading = say_as(frame.interpret_as, content.strip(), language=self.document.language, fmt=frame.fmt)
        if reading is None:
            self._emit_text(content, frame.rate)  # unknown interpretation: read it as text
        else:
            lead = " " if content[0].isspace() else ""
            trail = " " if content[-1].isspace() else ""
            self._emit_text(lead + reading + trail, frame.rate, normalize=False)

    def close(self) -> SsmlDocument:
        return self.document


def invalid_ssml(message: str, line: int, column: int) -> TextError:
    return TextError(f"Invalid SSML at line {line}, column {column}: {message}", code="invalid_ssml", status=400)


def parse_ssml(text: str, *, language: str | None = None, fallback_language: str | None = None) -> SsmlDocument:
    """Parse an SSML document into runs and pauses; raise ``TextError`` (400,
    "invalid_ssml", with line and column) for anything malformed or hostile.

    ``language`` (the request's) beats ``<speak xml:lang>``, which beats
    ``fallback_language``; the winner is ``document.language``, used for
    ``say-as`` readings.
    """
    if len(text) > MAX_SSML_CHARS:
        raise TextError(
            f"Invalid SSML at line 1, column 1: document longer than {MAX_SSML_CHARS} characters",
            code="invalid_ssml",
            status=400,
        )
    builder = _Builder(
        primary_language(language), primary_language(fallback_language), time.monotonic() + MAX_PARSE_SECONDS
    )
    parser = DefusedXMLParser(target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    builder.parser = parser
    try:
        parser.feed(text)
        document: SsmlDocument = parser.close()
    except TextError:
        raise
    except ParseError as exc:
        line, column = exc.position
        raise invalid_ssml(str(exc).split(": line ")[0], line, column + 1) from None
    except DefusedXmlException:
        # Expat reports where it stopped, somewhere inside the declaration;
        # point at the declaration itself.
        found = re.search(r"<!(?:DOCTYPE|ENTITY)", text)
        offset = found.start() if found else 0
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise invalid_ssml("DTDs, entity declarations and external references are not allowed", line, column) from None
    except UnicodeError as exc:
        raise builder.error(f"unreadable text ({type(exc).__name__})") from None
    return document
