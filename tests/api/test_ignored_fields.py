"""Nothing accepted silently: every field the OpenAI and ElevenLabs routes accept is honoured
or listed in ``tts.api.ignored`` (and docs/api.md), and ``X-Ignored-Fields`` names what a
request set that was ignored."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from elevenlabs import VoiceSettings
from elevenlabs.client import ElevenLabs
from openai import OpenAI
from rest_framework import serializers

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.api.elevenlabs import QueryInputSerializer, TextToSpeechInputSerializer
from tts.api.ignored import ELEVENLABS_IGNORED, IGNORED_FIELDS_HEADER, OPENAI_IGNORED
from tts.api.openai import SpeechInputSerializer
from tts.models import Voice

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Fishing boats rocked against the old stone wall."

# Each honoured field and a test that shows it changes the answer (or is checked, for ids).
OPENAI_HONOURED = {
    "model": "tests/api/test_openai_speech.py::test_it_answers_errors_in_openai_shape",
    "input": "tests/api/test_openai_speech.py::test_it_speaks_each_openai_format",
    "voice": "tests/api/test_openai_speech.py::test_it_maps_openai_voice_names_and_accepts_ours",
    "response_format": "tests/api/test_openai_speech.py::test_it_speaks_each_openai_format",
    "speed": "tests/api/test_openai_speech.py::test_it_honours_speed",
    "stream_format": "tests/streaming/test_http_stream.py::test_it_streams_sse_events",
}
ELEVENLABS_HONOURED = {
    "text": "tests/api/test_text_to_speech.py::test_it_synthesizes_in_each_format",
    "model_id": "tests/api/test_text_to_speech.py::test_it_refuses_bad_input_clearly",
    "language_code": "tests/api/test_text_to_speech.py::test_it_refuses_text_the_voice_cannot_speak",
    "voice_settings.speed": "tests/api/test_text_to_speech.py::test_it_speaks_slower_when_asked",
    "voice_settings.stability": "tests/api/test_seed.py::test_high_stability_varies_less_than_low_stability",
    "apply_text_normalization": "tests/api/test_text_to_speech.py::test_it_reads_numbers_and_symbols_aloud",
    "seed": "tests/api/test_seed.py::test_the_same_seed_gives_the_same_bytes_and_another_seed_differs",
    "pronunciation_dictionary_locators": "tests/api/test_pronunciation.py::test_a_new_version_is_a_new_cache_entry",
    "previous_text": "tests/api/test_stitching.py::test_a_continuation_starts_without_the_leading_pause",
    "next_text": "tests/api/test_stitching.py::test_next_text_changes_the_ending",
    "previous_request_ids": "tests/api/test_stitching.py::test_a_streamed_request_id_is_usable_once_finished",
    "next_request_ids": "tests/api/test_stitching.py::test_unknown_foreign_old_or_unfinished_ids_are_refused",
    "output_format": "tests/api/test_text_to_speech.py::test_it_synthesizes_in_each_format",
    "enable_logging": "tests/api/test_text_to_speech.py::test_it_keeps_no_text_or_audio_when_logging_is_off",
}
ELEVENLABS_OPERATIONS = (
    "text_to_speech",
    "text_to_speech_stream",
    "text_to_speech_with_timestamps",
    "text_to_speech_stream_with_timestamps",
)
ELEVENLABS_ROUTES = ("", "/stream", "/with-timestamps", "/stream/with-timestamps")


def serializer_fields(serializer: serializers.Serializer, prefix: str = "") -> Iterator[str]:
    """Every field a request may set; a nested object's fields by their path (``voice_settings.style``)."""
    for name, field in serializer.fields.items():
        if isinstance(field, serializers.Serializer):
            yield from serializer_fields(field, prefix=f"{prefix}{name}.")
        else:
            yield prefix + name


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operation(schema: dict[str, Any], operation_id: str) -> dict[str, Any]:
    for methods in schema["paths"].values():
        for op in methods.values():
            if op.get("operationId") == operation_id:
                return op
    raise AssertionError(f"no operation {operation_id}")


def elevenlabs_query_params(schema: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for operation_id in ELEVENLABS_OPERATIONS:
        op = operation(schema, operation_id)
        names |= {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
    return names


def docs_ignored_rows() -> dict[str, list[str]]:
    """docs/api.md's table of ignored fields: field -> [route, named when, why]."""
    text = (ROOT / "docs/api.md").read_text()
    section = text.split("## Ignored fields and `X-Ignored-Fields`", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \| (.+) \|$", line)
        if match:
            rows[match[1]] = [cell.strip() for cell in match[2].split(" | ")]
    return rows


def assert_test_exists(ref: str) -> None:
    path, name = ref.split("::")
    source = (ROOT / path).read_text()
    assert re.search(rf"^(async )?def {name}\(", source, re.M), f"{ref} does not exist"


def test_it_classifies_every_openai_field() -> None:
    fields = set(serializer_fields(SpeechInputSerializer()))
    unclassified = fields - set(OPENAI_HONOURED) - set(OPENAI_IGNORED)
    assert not unclassified, f"classify these OpenAI fields (honoured, or tts.api.ignored): {unclassified}"
    assert set(OPENAI_HONOURED) | set(OPENAI_IGNORED) <= fields  # nothing stale
    for ref in OPENAI_HONOURED.values():
        assert_test_exists(ref)


def test_it_classifies_every_elevenlabs_field(schema: dict[str, Any]) -> None:
    body = set(serializer_fields(TextToSpeechInputSerializer()))
    query = set(serializer_fields(QueryInputSerializer()))
    # The views parse what the schema advertises: a query parameter added to one is in the other.
    assert elevenlabs_query_params(schema) == query
    fields = body | query
    unclassified = fields - set(ELEVENLABS_HONOURED) - set(ELEVENLABS_IGNORED)
    assert not unclassified, f"classify these ElevenLabs fields (honoured, or tts.api.ignored): {unclassified}"
    assert set(ELEVENLABS_HONOURED) | set(ELEVENLABS_IGNORED) <= fields
    # Ignored on every engine and honoured cannot both hold; only an engine-bound entry may.
    both = set(ELEVENLABS_HONOURED) & set(ELEVENLABS_IGNORED)
    assert all(ELEVENLABS_IGNORED[name].engines for name in both), both
    for ref in ELEVENLABS_HONOURED.values():
        assert_test_exists(ref)


def test_the_docs_table_is_the_ignored_mapping() -> None:
    rows = docs_ignored_rows()
    expected = {name: ("OpenAI", spec) for name, spec in OPENAI_IGNORED.items()}
    expected |= {name: ("ElevenLabs", spec) for name, spec in ELEVENLABS_IGNORED.items()}
    assert set(rows) == set(expected)
    for name, (route, spec) in expected.items():
        assert rows[name][0] == route, name
        assert rows[name][-1] == spec.reason, name
        assert ("Kokoro" in rows[name][1]) == bool(spec.engines), name


@pytest.fixture
def wsgi_keeps_the_test_connection() -> Iterator[None]:
    """As Django's test client does: a request served in-process must not close the test's database connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _openai(tenant: TenantCtx) -> OpenAI:
    # The official client, served in-process by Django's WSGI handler (no socket).
    # httpx2: the HTTP library this openai release is built on.
    transport = httpx2.WSGITransport(app=WSGIHandler())
    return OpenAI(api_key=tenant.key, base_url="http://testserver/v1", http_client=httpx2.Client(transport=transport))


@pytest.mark.usefixtures("wsgi_keeps_the_test_connection")
def test_the_openai_sdk_sees_instructions_named(tenant_a: TenantCtx, joe: Voice) -> None:
    raw = _openai(tenant_a).audio.speech.with_raw_response.create(
        model="gpt-4o-mini-tts", voice="alloy", input=TEXT, response_format="pcm", instructions="Speak like a pirate."
    )
    assert raw.headers[IGNORED_FIELDS_HEADER] == "instructions"
    samples, rate = decode_audio(raw.content, "pcm")
    assert_speech(samples, rate, expected_rate=24000, text=TEXT)


@pytest.mark.parametrize("stream_format", ["audio", "sse"])
def test_openai_names_instructions_and_not_a_plain_request(tenant_a: TenantCtx, joe: Voice, stream_format: str) -> None:
    body = {"model": "tts-1", "input": TEXT, "voice": "alloy", "response_format": "pcm", "stream_format": stream_format}
    client = tenant_a.client()
    asked = client.post("/v1/audio/speech", {**body, "instructions": "Whisper."}, format="json")
    plain = client.post("/v1/audio/speech", {**body, "instructions": ""}, format="json")
    assert asked.status_code == plain.status_code == 200
    assert asked[IGNORED_FIELDS_HEADER] == "instructions"
    assert IGNORED_FIELDS_HEADER not in plain


@pytest.mark.parametrize("route", ELEVENLABS_ROUTES)
def test_each_elevenlabs_route_names_what_it_ignored(tenant_a: TenantCtx, joe: Voice, route: str) -> None:
    url = f"/v1/text-to-speech/joe{route}?output_format=pcm_22050&optimize_streaming_latency=3"
    body = {"text": TEXT, "voice_settings": {"style": 0.4, "use_speaker_boost": True, "speed": 1.1}, "seed": 3}
    response = tenant_a.client().post(url, body, format="json")
    assert response.status_code == 200, response.content
    # seed and speed are honoured by joe (Piper): not named.
    expected = "voice_settings.style, voice_settings.use_speaker_boost, optimize_streaming_latency"
    assert response[IGNORED_FIELDS_HEADER] == expected
    if route == "":
        samples, rate = decode_audio(response.content, "pcm_22050")
        assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    elif route.startswith("/stream"):
        b"".join(response.streaming_content)  # type: ignore[attr-defined]


def test_a_plain_or_default_valued_request_gets_no_header(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    defaults = {
        "similarity_boost": 0.75,
        "style": 0,
        "use_speaker_boost": False,
        "stability": 0.5,
    }
    for body in (
        {"text": TEXT},
        {"text": TEXT, "voice_settings": defaults, "use_pvc_as_ivc": False, "audio_effects": {}, "seed": 5},
    ):
        response = client.post("/v1/text-to-speech/joe?optimize_streaming_latency=0", body, format="json")
        assert response.status_code == 200, response.content
        assert IGNORED_FIELDS_HEADER not in response


def test_kokoro_names_seed_and_stability(tenant_a: TenantCtx, kokoro: Voice) -> None:
    text = "こんにちは、元気ですか。"
    body = {"text": text, "seed": 7, "voice_settings": {"stability": 0.9}}
    response = tenant_a.client().post(
        f"/v1/text-to-speech/{kokoro.voice_id}?output_format=pcm_24000", body, format="json"
    )
    assert response.status_code == 200, response.content
    assert response[IGNORED_FIELDS_HEADER] == "voice_settings.stability, seed"


@pytest.mark.parametrize(
    ("url", "body", "param"),
    [
        ("/v1/text-to-speech/joe", {"text": TEXT, "voice_settings": {"style": 2}}, "voice_settings.style"),
        ("/v1/text-to-speech/joe?optimize_streaming_latency=9", {"text": TEXT}, "optimize_streaming_latency"),
        ("/v1/text-to-speech/joe", {"text": TEXT, "use_pvc_as_ivc": "maybe"}, "use_pvc_as_ivc"),
        ("/v1/text-to-speech/joe", {"text": TEXT, "audio_effects": [1]}, "audio_effects"),
    ],
)
def test_ignored_fields_are_still_validated(tenant_a: TenantCtx, joe: Voice, url: str, body: dict, param: str) -> None:
    response = tenant_a.client().post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"]["param"] == param


@pytest.mark.django_db(transaction=True)
def test_daphne_streams_carry_the_header_before_the_audio(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    # Under ASGI both routes stream as they synthesize: the header goes out with the first bytes.
    openai = OpenAI(api_key=tenant_a.key, base_url=f"{live_server_url}/v1")
    with openai.audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="pcm", instructions="Cheerfully."
    ) as response:
        assert response.headers[IGNORED_FIELDS_HEADER] == "instructions"
        audio = b"".join(response.iter_bytes())
    assert_speech(*decode_audio(audio, "pcm"), expected_rate=24000, text=TEXT)
    eleven = ElevenLabs(api_key=tenant_a.key, base_url=live_server_url)
    with eleven.text_to_speech.with_raw_response.stream(
        "joe", text=TEXT, output_format="pcm_22050", voice_settings=VoiceSettings(similarity_boost=0.2)
    ) as raw:
        assert raw.headers[IGNORED_FIELDS_HEADER.lower()] == "voice_settings.similarity_boost"  # a plain dict
        audio = b"".join(raw.data)
    assert_speech(*decode_audio(audio, "pcm_22050"), expected_rate=22050, text=TEXT)
