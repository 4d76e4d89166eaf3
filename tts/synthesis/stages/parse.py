"""What a caller sent, checked, with errors that name the caller's field.

The one home of three rules every entry point shares (REST, streams, each
WebSocket piece, jobs): the character limit of one request
(``accounts.quota.characters_per_request_limit``) and the characters no
request may send (``tts.text.characters``), text -> speakable
segments (``TextError`` translated into a ``SynthesisError``), and output
format names -> formats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from django.conf import settings

from accounts.models import Tenant
from accounts.quota import characters_per_request_limit
from tts.audio.formats import OutputFormat, UnknownFormatError, parse_elevenlabs_format, parse_openai_format
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice
from tts.text.characters import check_characters
from tts.text.g2p import has_g2p
from tts.text.language import check_language
from tts.text.prepare import TextError, prepare_text
from tts.text.segment import Segment


def text_characters_valid(text: str, *, field: str = "text") -> str:
    """``text`` unless it holds NUL or a lone surrogate: ``SynthesisError`` 400 ``invalid_characters``
    naming ``field`` (the check every door runs first, ``tts.text.characters``, once more here)."""
    try:
        check_characters(text, field=field)
    except TextError as exc:
        raise SynthesisError.from_text(exc) from exc
    return text


def validate_text(text: object, *, tenant: Tenant, field: str = "text", limit: int | None = None) -> str:
    """``text`` if it is a non-blank string of valid characters within the limit (the plan's
    per-request one by default)."""
    if not isinstance(text, str) or not text.strip():
        raise SynthesisError(f"'{field}' must contain some text to speak.", code="empty_text", status=400, field=field)
    text_characters_valid(text, field=field)
    limit = characters_per_request_limit(tenant.plan) if limit is None else limit
    if len(text) > limit:
        raise SynthesisError(
            f"'{field}' is {len(text)} characters long; the limit per request is {limit}.",
            code="max_character_limit_exceeded",
            status=413,
            field=field,
        )
    return text


def readable_languages(voice: Voice, model_version: ModelVersion) -> list[str]:
    """What a voice reads, its own language first: its model's languages (a Kokoro voice reads every
    language its model has a front end for, ``tts.text.g2p``; Piper's voices their one)."""
    languages = list(dict.fromkeys([voice.language, *model_version.languages]))
    if model_version.engine == ModelVersion.Engine.KOKORO_ONNX:
        readable = [code for code in languages if has_g2p(code)]
        return readable or languages
    return languages


def speaking_language(text: str, languages: Sequence[str], requested: str | None) -> str:
    """The language ``text`` is spoken in by a voice reading ``languages`` (its own first, then its
    model's): ``requested`` (``language_code``) when the voice reads it, else the detected one.
    ``SynthesisError`` 422 naming the field when the voice cannot speak it (``check_language``)."""
    try:
        return check_language(text, languages, requested)
    except TextError as exc:
        raise SynthesisError.from_text(exc) from exc


def segments_for(
    text: str,
    *,
    language: str | None,
    normalization: str,
    field: str = "text",
    require_speech: bool = True,
    drop_blank: bool = False,
) -> list[Segment]:
    """The segments of ``text``; blank ones (an SSML break's pause) only unless ``drop_blank``.

    ``SynthesisError`` naming ``field`` if the text cannot be read, or, with
    ``require_speech``, if nothing in it can be spoken.
    """
    try:
        segments = prepare_text(
            text,
            language=language,
            normalization=normalization,  # type: ignore[arg-type]
            max_segment_chars=settings.TTS_SEGMENT_MAX_CHARS,
        )
    except TextError as exc:
        raise SynthesisError(
            str(exc), code=exc.code, status=exc.status, field=field if exc.field == "text" else exc.field
        ) from exc
    if language:
        # The language the text is spoken in travels with each segment down to the engine's front end.
        segments = [dataclasses.replace(seg, language=language) for seg in segments]
    spoken = [seg for seg in segments if seg.text.strip()]
    if require_speech and not spoken:
        raise SynthesisError(f"'{field}' has nothing that can be spoken.", code="empty_text", status=400, field=field)
    return spoken if drop_blank else segments


def output_format_for(name: str, *, dialect: str = "elevenlabs", field: str = "output_format") -> OutputFormat:
    """The output format a caller named, in its API's vocabulary (``elevenlabs`` or ``openai``).

    The one home of format parsing for every route and the WebSocket: an unknown
    name is a 400 naming ``field``.
    """
    try:
        return parse_openai_format(name) if dialect == "openai" else parse_elevenlabs_format(name)
    except UnknownFormatError as exc:
        raise SynthesisError(f"{field}: {exc}", code=f"invalid_{field}", status=400, field=field) from exc
