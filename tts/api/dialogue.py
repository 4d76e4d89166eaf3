"""ElevenLabs' text-to-dialogue: several voices taking turns, in one synthesis (docs/dialogue.md).

* ``POST /v1/text-to-dialogue``: the whole file;
* ``POST /v1/text-to-dialogue/stream``: chunked audio as it is synthesized;
* ``POST /v1/text-to-dialogue/with-timestamps``: ``{"audio_base64", "alignment",
  "normalized_alignment", "voice_segments"}``;
* ``POST /v1/text-to-dialogue/stream/with-timestamps``: newline-delimited JSON, one such object
  per audio chunk, its ``voice_segments`` those of the characters it carries.

The body is ElevenLabs' (``inputs``: ``[{text, voice_id}]``, and the text-to-speech fields that
apply to every turn); the views only translate it into one ``SynthesisRequest`` with ``turns``,
which the one pipeline resolves, admits, prepares, bills and speaks turn by turn in each turn's voice
(``tts.synthesis.stages``): one history item, one bill, the engine-time budget and the fair
scheduler as for any request.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from django.conf import settings as django_settings
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_tenant
from accounts.models import Scope, Tenant
from tts.errors import SynthesisError
from tts.synthesis import (
    AlignmentChunk,
    DialogueTurn,
    SynthesisRequest,
    SynthesisRun,
    ThreadedStream,
    dialogue_text,
    ensure_engine,
    output_format_for,
    run_stream,
    synthesis_create,
    synthesis_prepare,
    voice_segments,
)

from .elevenlabs import DEFAULT_OUTPUT_FORMAT, DictionaryLocatorSerializer, audio_headers
from .fields import StrictCharField
from .ignored import DIALOGUE_IGNORED, IgnoredField, flatten, ignored_asked, set_ignored_header
from .openapi import ENABLE_LOGGING_PARAM, OUTPUT_FORMAT_PARAM, audio_responses, error_responses
from .streaming import AudioStreamResponse, audio_stream_response, is_asgi
from .timestamps import NDJSON, AudioWithTimestampsSerializer, timed_chunks

logger = logging.getLogger(__name__)

ERRORS = (400, 403, 404, 413, 422, 429, 503)


class DialogueInputSerializer(serializers.Serializer):
    # A blank text passes here: the pipeline refuses it naming ``inputs[i].text``. A text past
    # TTS_DIALOGUE_MAX_TURN_CHARS is refused here (a 400 naming ``inputs.<i>.text``), before any work;
    # the plan's characters per request (or per job) are the pipeline's, a 413.
    text = StrictCharField(allow_blank=True, trim_whitespace=False)
    voice_id = StrictCharField(max_length=100)

    def validate_text(self, value: str) -> str:
        # Read per request (the setting), not when the class is made; jobs' dialogues share it.
        limit = django_settings.TTS_DIALOGUE_MAX_TURN_CHARS
        if len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="max_length"
            )
        return value


class DialogueSettingsSerializer(serializers.Serializer):
    # stability scales the VITS noise of every turn, as ``voice_settings.stability`` does on
    # text-to-speech; the others are accepted and ignored (tts.api.ignored).
    stability = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    similarity = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    clone_strength = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)


class TextToDialogueInputSerializer(serializers.Serializer):
    # The bounds (turns, distinct voices, characters, blank texts) are the pipeline's, each a setting.
    inputs = serializers.ListField(child=DialogueInputSerializer(), allow_empty=True)
    model_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    language_code = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=16)
    settings = DialogueSettingsSerializer(required=False, allow_null=True)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=4294967295)
    pronunciation_dictionary_locators = serializers.ListField(
        child=DictionaryLocatorSerializer(), required=False, allow_null=True
    )
    apply_text_normalization = serializers.ChoiceField(choices=["auto", "on", "off"], required=False, default="auto")
    # Request stitching, as on text-to-speech (``future_text`` is its ``next_text``).
    previous_text = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    future_text = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    previous_request_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, allow_null=True, max_length=3
    )
    next_request_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, allow_null=True, max_length=3
    )
    use_pvc_as_ivc = serializers.BooleanField(required=False, allow_null=True)
    audio_effects = serializers.DictField(required=False, allow_null=True)

    def _bounded_context(self, value: str | None) -> str | None:
        limit = django_settings.TTS_CONTEXT_MAX_CHARS
        if value is not None and len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="context_too_long"
            )
        return value

    def validate_previous_text(self, value: str | None) -> str | None:
        return self._bounded_context(value)

    def validate_future_text(self, value: str | None) -> str | None:
        return self._bounded_context(value)


class DialogueQuerySerializer(serializers.Serializer):
    output_format = StrictCharField(required=False, default=DEFAULT_OUTPUT_FORMAT, max_length=64)
    enable_logging = serializers.BooleanField(required=False, default=True)


def dialogue_request_from(
    request: Request, *, source: str, tenant: Tenant | None = None
) -> tuple[SynthesisRequest, dict[str, IgnoredField]]:
    """The pipeline's request for an ElevenLabs text-to-dialogue call (its ``turns``), with the
    fields it set that this server ignores (for ``X-Ignored-Fields``). ``tenant``: the caller when
    it is not an API key (the dashboard playground's session); else the key's tenant."""
    query = DialogueQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    fmt = output_format_for(query.validated_data["output_format"])
    body = TextToDialogueInputSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data: dict[str, Any] = body.validated_data
    asked = ignored_asked(DIALOGUE_IGNORED, flatten({**query.validated_data, **data}))
    turns = [DialogueTurn(text=item["text"], voice_id=item["voice_id"]) for item in data["inputs"]]
    settings_in = data.get("settings") or {}
    req = SynthesisRequest(
        tenant=tenant or request_tenant(request),
        api_key=None if tenant is not None else request_api_key(request),
        voice_id=turns[0].voice_id if turns else "",
        text=dialogue_text(turns),
        output_format=fmt,
        source=source,
        model_id=data.get("model_id") or None,
        language=data.get("language_code") or None,
        enable_logging=query.validated_data["enable_logging"],
        normalization=data.get("apply_text_normalization", "auto"),
        request_id=getattr(request._request, "request_id", ""),
        settings={k: v for k, v in settings_in.items() if v is not None},
        text_field="inputs",
        voice_field="inputs[0].voice_id",
        seed=data.get("seed"),
        previous_text=data.get("previous_text") or None,
        next_text=data.get("future_text") or None,
        previous_request_ids=list(data.get("previous_request_ids") or []),
        next_request_ids=list(data.get("next_request_ids") or []),
        pronunciation_dictionary_locators=[dict(x) for x in data.get("pronunciation_dictionary_locators") or []],
        turns=turns,
    )
    return req, asked


class VoiceSegmentSerializer(serializers.Serializer):
    voice_id = serializers.CharField()
    start_time_seconds = serializers.FloatField()
    end_time_seconds = serializers.FloatField()
    character_start_index = serializers.IntegerField()
    character_end_index = serializers.IntegerField()
    dialogue_input_index = serializers.IntegerField()


class DialogueWithTimestampsSerializer(AudioWithTimestampsSerializer):
    voice_segments = VoiceSegmentSerializer(many=True)


def _schema(operation_id: str, summary: str, responses: dict[Any, Any]) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            tags=["text-to-dialogue"],
            summary=summary,
            request=TextToDialogueInputSerializer,
            parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM],
            responses={**responses, **error_responses("elevenlabs", *ERRORS)},
        )
    )


@_schema(
    "text_to_dialogue",
    "Convert a dialogue (turns in several voices) to speech (whole file)",
    audio_responses("The audio; headers history-item-id, x-character-count, request-id (and X-Ignored-Fields)."),
)
class TextToDialogueApi(APIView):
    """The whole dialogue's audio, each turn in its own voice."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> HttpResponse:
        req, ignored = dialogue_request_from(request, source="elevenlabs")
        result = synthesis_create(req)
        response = HttpResponse(result.audio, content_type=result.output_format.content_type)
        audio_headers(response, result.record, request_id=req.request_id, ignored=ignored)
        return response


@_schema(
    "text_to_dialogue_stream",
    "Convert a dialogue to speech, streamed while it is synthesized",
    audio_responses("Chunked audio, one piece per sentence as soon as it is ready."),
)
class TextToDialogueStreamApi(APIView):
    """The dialogue's audio, chunked, as it is synthesized."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> StreamingHttpResponse:
        req, ignored = dialogue_request_from(request, source="elevenlabs_stream")
        return audio_stream_response(request, synthesis_prepare(req), ignored=ignored)


@_schema(
    "text_to_dialogue_with_timestamps",
    "Convert a dialogue to speech with character timestamps and voice segments",
    {200: DialogueWithTimestampsSerializer},
)
class TextToDialogueWithTimestampsApi(APIView):
    """The whole audio, base64, with every character's times and which voice speaks when."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> HttpResponse:
        req, ignored = dialogue_request_from(request, source="elevenlabs")
        req.timestamps = True
        result = synthesis_create(req)
        timed = result.alignment or {"alignment": None, "normalized_alignment": None}
        body = {
            "audio_base64": base64.b64encode(result.audio).decode("ascii"),
            "alignment": timed.get("alignment"),
            "normalized_alignment": timed.get("normalized_alignment"),
            "voice_segments": timed.get("voice_segments") or [],
        }
        response = HttpResponse(json.dumps(body, separators=(",", ":")), content_type="application/json")
        audio_headers(response, result.record, request_id=req.request_id, ignored=ignored)
        return response


class _Lines:
    """A timestamped stream's lines: each chunk's audio, alignment and the voice segments of the
    characters it carries (counted from the dialogue's first character)."""

    def __init__(self, prep: SynthesisRun) -> None:
        self.prep = prep
        self.sent = 0  # characters of the alignment sent so far

    def line(self, data: bytes, alignment: AlignmentChunk | None) -> bytes:
        timed = alignment.as_json() if alignment is not None else {"alignment": None, "normalized_alignment": None}
        track = timed["alignment"]
        segments = voice_segments(self.prep.turn_spans, track, first=self.sent)
        self.sent += len(track["characters"]) if track else 0
        body = {"audio_base64": base64.b64encode(data).decode("ascii"), **timed, "voice_segments": segments}
        return json.dumps(body, separators=(",", ":")).encode() + b"\n"

    async def lines_async(self, stream: ThreadedStream[tuple[bytes, AlignmentChunk | None]]) -> AsyncIterator[bytes]:
        try:
            async for data, alignment in stream:
                yield self.line(data, alignment)
        except SynthesisError as exc:
            # The status line is gone; the stream ends early and the record says why.
            logger.warning("timestamped dialogue stream ended early: %s", exc.message)

    def lines_sync(self) -> Iterator[bytes]:
        try:
            for data, alignment in timed_chunks(self.prep):
                yield self.line(data, alignment)
        except SynthesisError as exc:
            logger.warning("timestamped dialogue stream ended early: %s", exc.message)


@_schema(
    "text_to_dialogue_stream_with_timestamps",
    "Stream a dialogue with character timestamps and voice segments (newline-delimited JSON)",
    {
        (200, NDJSON): OpenApiResponse(
            DialogueWithTimestampsSerializer, description="One JSON object per line, one line per audio chunk."
        )
    },
)
class TextToDialogueStreamWithTimestampsApi(APIView):
    """Audio chunks as they are synthesized, each with its characters' timings and voice segments."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> StreamingHttpResponse:
        req, ignored = dialogue_request_from(request, source="elevenlabs_stream")
        req.timestamps = True
        prep = synthesis_prepare(req)
        ensure_engine(prep)
        lines = _Lines(prep)
        if is_asgi(request):
            stream: ThreadedStream[tuple[bytes, AlignmentChunk | None]] = run_stream(
                prep, lambda: timed_chunks(prep), name="tts-dialogue-timed"
            )
            response: StreamingHttpResponse = AudioStreamResponse(
                stream, lines.lines_async(stream), content_type=NDJSON
            )
        else:
            response = StreamingHttpResponse(lines.lines_sync(), content_type=NDJSON)
        audio_headers(response, prep.record, request_id=req.request_id)
        response["X-Accel-Buffering"] = "no"
        response["Cache-Control"] = "no-cache"
        set_ignored_header(response, ignored, engine=prep.model_version.engine)
        return response
