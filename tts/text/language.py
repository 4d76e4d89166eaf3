"""Which language a text is in, and whether a voice can speak it.

Two signals, used for what each is good at. The writing system decides
refusals: Chinese characters sent to an English voice are unmistakable even
in two words, while Latin-script text in another language (German to an
English voice) is pronounceable and full of names and quotations that fool
any detector, so it is never refused. py3langid (a small naive-Bayes model,
loaded once on first use) picks among a voice's languages that share a script.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .errors import TextError
from .normalize import primary_language

# Detection reads at most this much; more text changes nothing but the cost.
_SAMPLE_CHARS = 2000
# CJK characters carry about a word each; weigh them so "我喜欢Python" counts
# as Chinese and "the word 你好" as English.
_WIDE_SCRIPTS = frozenset({"Han", "Kana", "Hangul"})
_WIDE_WEIGHT = 3
# A refusal needs at least this much (weighted) foreign text: "你好世界" is
# enough, a lone "你好" inside an otherwise empty request is not.
_MIN_FOREIGN_WEIGHT = 12
# ...and the foreign script must outweigh everything the voice can read.
_MIN_FOREIGN_SHARE = 0.6
# py3langid's best candidate must hold this share of the candidates' mass.
_MIN_CHOICE_SHARE = 0.6
# ...and this much against a voice's own language that writes the same script ("東京" to a Japanese voice).
_MIN_SWITCH_SHARE = 0.95

# Scripts each language is written in, beyond Latin (which every voice reads:
# brand names, code and URLs appear in Latin script in every language).
_SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"Han"}),
    "ja": frozenset({"Han", "Kana"}),
    "ko": frozenset({"Hangul", "Han"}),
    "el": frozenset({"Greek"}),
    "he": frozenset({"Hebrew"}),
    "yi": frozenset({"Hebrew"}),
    "th": frozenset({"Thai"}),
    "lo": frozenset({"Lao"}),
    "km": frozenset({"Khmer"}),
    "my": frozenset({"Myanmar"}),
    "ka": frozenset({"Georgian"}),
    "hy": frozenset({"Armenian"}),
    "am": frozenset({"Ethiopic"}),
    "ti": frozenset({"Ethiopic"}),
    "bn": frozenset({"Bengali"}),
    "as": frozenset({"Bengali"}),
    "pa": frozenset({"Gurmukhi"}),
    "gu": frozenset({"Gujarati"}),
    "ta": frozenset({"Tamil"}),
    "te": frozenset({"Telugu"}),
    "kn": frozenset({"Kannada"}),
    "ml": frozenset({"Malayalam"}),
    "si": frozenset({"Sinhala"}),
    "bo": frozenset({"Tibetan"}),
    "mn": frozenset({"Cyrillic", "Mongolian"}),
}
for _code in ["ru", "uk", "be", "bg", "mk", "sr", "kk", "ky", "tg", "tt", "ba", "cv"]:
    _SCRIPTS[_code] = frozenset({"Cyrillic"})
for _code in ["ar", "fa", "ur", "ps", "ug", "sd", "ku"]:
    _SCRIPTS[_code] = frozenset({"Arabic"})
for _code in ["hi", "mr", "ne", "sa"]:
    _SCRIPTS[_code] = frozenset({"Devanagari"})

# What to call a script in an error message when py3langid has no opinion.
_SCRIPT_LANGUAGE = {"Han": "zh", "Kana": "ja", "Hangul": "ko", "Cyrillic": "ru", "Arabic": "ar"}

# fmt: off
_KNOWN_SCRIPTS = frozenset([
    "Latin", "Han", "Kana", "Hangul", "Cyrillic", "Greek", "Arabic", "Hebrew", "Devanagari", "Bengali",
    "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam", "Sinhala", "Thai", "Lao",
    "Tibetan", "Myanmar", "Georgian", "Armenian", "Ethiopic", "Khmer", "Mongolian", "Cherokee", "Syriac", "Thaana"
])
# fmt: on

_SCRIPT_PREFIXES = {
    "CJK": "Han",
    "IDEOGRAPHIC": "Han",
    "HIRAGANA": "Kana",
    "KATAKANA": "Kana",
    "KATAKANA-HIRAGANA": "Kana",
    "HANGUL": "Hangul",
}

# py3langid labels that count as one of our codes.
_LANGID_ALIASES = {"zh": ("zh", "yue", "wuu"), "no": ("no", "nb", "nn"), "nb": ("nb", "no", "nn"), "en": ("en", "pcm")}

# "[^<>]", not "[^>]": a flood of "<" without ">" must stay linear.
_SSML_TAG = re.compile(r"<[^<>]*>")


@lru_cache(maxsize=4096)
def script_of(char: str) -> str | None:
    """Unicode script of a letter, from its name ("CYRILLIC SMALL LETTER A")."""
    name = unicodedata.name(char, "")
    if not name:
        return None
    words = name.split()
    first = words[1] if words[0] in ("FULLWIDTH", "HALFWIDTH") and len(words) > 1 else words[0]
    script = _SCRIPT_PREFIXES.get(first, first.title())
    # Letter-like symbols (ordinal indicators, math letters) name no script;
    # they never decide anything.
    return script if script in _KNOWN_SCRIPTS else None


def script_weights(text: str) -> Counter[str]:
    """Weighted letter counts per script in (a sample of) ``text``."""
    weights: Counter[str] = Counter()
    for char in text[:_SAMPLE_CHARS]:
        if char.isalpha():
            script = script_of(char)
            if script:
                weights[script] += _WIDE_WEIGHT if script in _WIDE_SCRIPTS else 1
    return weights


def scripts_for(language: str) -> frozenset[str]:
    return _SCRIPTS.get(language, frozenset()) | {"Latin"}


def strip_markup(text: str) -> str:
    """SSML markup is not text in any language; detect on (a sample of) the content."""
    if text.lstrip().startswith("<"):
        return _SSML_TAG.sub(" ", text[: _SAMPLE_CHARS * 8])
    return text


_identifier: Any = None
_identifier_lock = threading.Lock()


def _langid() -> Any:
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _identifier


def _langid_scores(text: str) -> dict[str, float]:
    # rank() does not mutate the model (set_languages would), so one shared
    # identifier is safe across threads.
    return dict(_langid().rank(text))


def _candidate_score(scores: dict[str, float], code: str) -> float:
    return sum(scores.get(label, 0.0) for label in _LANGID_ALIASES.get(code, (code,)))


def detect_language(text: str, candidates: Sequence[str], *, prefer: str | None = None) -> str | None:
    """The candidate language ``text`` is most likely in, or None if unsure.

    ``candidates`` are the languages of the installed voices (ISO 639-1, region
    subtags ignored). None means: no letters, no candidate writes this script,
    or several do and the text does not say which. ``prefer`` (a voice's own
    language) keeps a text in a script it shares with others (kanji-only text to
    a Japanese voice) unless py3langid is nearly sure (``_MIN_SWITCH_SHARE``).
    """
    codes = list(dict.fromkeys(code for code in map(primary_language, candidates) if code))
    sample = strip_markup(text)[:_SAMPLE_CHARS]
    weights = script_weights(sample)
    if not codes or not weights:
        return None
    total = sum(weights.values())
    dominant = weights.most_common(1)[0][0]

    def coverage(code: str) -> float:
        return sum(weights[s] for s in scripts_for(code)) / total

    if dominant != "Latin":
        # A script only some candidates write settles it (Cyrillic -> ru).
        writers = [code for code in codes if dominant in _SCRIPTS.get(code, ())]
        if len(writers) == 1:
            return writers[0]
        codes = writers or codes
    compatible = [code for code in codes if coverage(code) >= 0.5]
    if not compatible:
        return None
    if len(compatible) == 1:
        return compatible[0]
    scores = _langid_scores(sample)
    ranked = sorted(compatible, key=lambda code: _candidate_score(scores, code), reverse=True)
    mass = sum(_candidate_score(scores, code) for code in compatible)
    best = ranked[0]
    if mass <= 0 or _candidate_score(scores, best) / mass < _MIN_CHOICE_SHARE:
        return None
    if prefer in compatible and best != prefer and dominant in _SCRIPTS.get(prefer, ()):
        if prefer == "ja" and dominant == "Han" and _japanese_kanji_only(sample):
            return prefer  # Japanese writes every one of these characters: a Japanese voice reads it so
        pair = _candidate_score(scores, best) + _candidate_score(scores, prefer)
        if pair <= 0 or _candidate_score(scores, best) / pair < _MIN_SWITCH_SHARE:
            return prefer
    return best


def _japanese_kanji_only(text: str) -> bool:
    """Whether every Han character of ``text`` is one Japanese writes (in JIS X 0208, as cp932 encodes
    it): "日本国憲法第九条" is, "欢迎使用" (simplified Chinese) is not."""
    for char in text:
        if script_of(char) == "Han":
            try:
                char.encode("cp932")
            except UnicodeEncodeError:
                return False
    return True


def _foreign_language(sample: str, script: str) -> str:
    scores = _langid_scores(sample)
    ranked = [label for label, _ in sorted(scores.items(), key=lambda item: item[1], reverse=True)]
    for label in ranked[:3]:
        code = "zh" if label in ("yue", "wuu") else label
        if script in _SCRIPTS.get(code, ()):
            return code
    return _SCRIPT_LANGUAGE.get(script, script.lower())


def check_language(text: str, voice_languages: Sequence[str], requested: str | None) -> str:
    """The language to speak ``text`` in with a voice speaking ``voice_languages``.

    Raises ``TextError`` (422, "unsupported_language") when the request names
    a language the voice does not speak, or when the text is plainly written
    in a script none of the voice's languages use. Anything short or mixed is
    let through: better accented speech than a refused request.
    """
    codes = list(dict.fromkeys(code for code in map(primary_language, voice_languages) if code))
    wanted = primary_language(requested)
    if wanted and codes and wanted not in codes:
        raise TextError(
            f"This voice speaks {', '.join(codes)}; language_code {requested!r} is not supported.",
            code="unsupported_language",
            status=422,
            field="language_code",
        )
    speakable = frozenset().union(*(scripts_for(code) for code in (codes or ["en"])))
    sample = strip_markup(text)[:_SAMPLE_CHARS]
    weights = script_weights(sample)
    total = sum(weights.values())
    foreign = {script: weight for script, weight in weights.items() if script not in speakable}
    foreign_weight = sum(foreign.values())
    if foreign_weight >= _MIN_FOREIGN_WEIGHT and foreign_weight / total >= _MIN_FOREIGN_SHARE:
        script = max(foreign, key=lambda s: foreign[s])
        detected = _foreign_language(sample, script)
        raise TextError(
            f"The text appears to be in {detected} ({script} script); this voice speaks {', '.join(codes or ['en'])}.",
            code="unsupported_language",
            status=422,
            field="text",
        )
    if wanted:
        return wanted
    if not codes:
        return "en"
    return detect_language(sample, codes, prefer=codes[0]) or _fallback_language(codes, weights)


def _fallback_language(codes: list[str], weights: Counter[str]) -> str:
    """When detection is unsure: the first of ``codes`` (the voice's own language first) that writes
    the text's main script natively; Latin text to a voice whose own language does not write it
    (a Chinese voice reading "Hello there") goes to the first Latin-script language (English)."""
    if weights:
        dominant = weights.most_common(1)[0][0]
        for code in codes:
            native = _SCRIPTS.get(code, frozenset())
            if dominant in native or (dominant == "Latin" and not native):
                return code
    return codes[0]
