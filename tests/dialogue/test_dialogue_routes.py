"""ElevenLabs' text-to-dialogue over HTTP: the four routes, one record and one bill, voice
segments, the pause between turns, dictionaries and seed on every turn, and the limits."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_tenant, second_version
from tts.api.dialogue import TextToDialogueInputSerializer
from tts.api.ignored import DIALOGUE_IGNORED, IGNORED_FIELDS_HEADER
from tts.models import ModelVersion, SynthesisRecord, Voice

FIRST = "Is the harbour open today?"
SECOND = "Yes, the boats left at dawn."
URL = "/v1/text-to-dialogue"
FORMAT = "pcm_22050"


@pytest.fixture
def joe2(joe: Voice) -> Voice:
    """A second voice on joe's model (a second speaker row of the same model version)."""
    return Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)


def _inputs(*texts_and_voices: tuple[str, str]) -> list[dict[str, str]]:
    return [{"text": text, "voice_id": voice_id} for text, voice_id in texts_and_voices]


DIALOGUE = _inputs((FIRST, "joe"), (SECOND, "joe2"))
JOINED = f"{FIRST}\n{SECOND}"


def _post(ctx: TenantCtx, route: str = "", body: dict[str, Any] | None = None, fmt: str = FORMAT) -> Any:
    return ctx.client().post(f"{URL}{route}?output_format={fmt}", body or {"inputs": DIALOGUE}, format="json")


def _seconds(audio: bytes, text: str = JOINED) -> float:
    samples, rate = decode_audio(audio, FORMAT)
    # Two sentences and the pause between turns: a little more time than one text of the same length.
    assert_speech(samples, rate, expected_rate=22050, text=text, tolerance=0.6)
    return len(samples) / rate


def _one_record(ctx: TenantCtx, billed: int = len(FIRST) + len(SECOND)) -> SynthesisRecord:
    record = SynthesisRecord.objects.get(tenant=ctx.tenant)
    assert record.status == SynthesisRecord.Status.SUCCESS
    assert record.characters == billed
    assert record.text == JOINED and record.voice_id == "joe"
    assert record.settings["dialogue_inputs"] == [{"voice_id": "joe"}, {"voice_id": "joe2"}]
    return record


def _check_segments(segments: list[dict[str, Any]], characters: list[str]) -> None:
    """Both turns, in order, each over its own text in the alignment's characters."""
    assert [s["dialogue_input_index"] for s in segments] == [0, 1]
    assert [s["voice_id"] for s in segments] == ["joe", "joe2"]
    text = "".join(characters)
    assert text == JOINED
    for segment, spoken in zip(segments, (FIRST, SECOND), strict=True):
        assert text[segment["character_start_index"] : segment["character_end_index"]] == spoken
        assert segment["start_time_seconds"] < segment["end_time_seconds"]
    assert segments[0]["end_time_seconds"] <= segments[1]["start_time_seconds"]


def test_it_speaks_a_dialogue_as_one_synthesis(tenant_a: TenantCtx, joe2: Voice) -> None:
    response = _post(tenant_a)
    assert response.status_code == 200, response.content
    _seconds(response.content)
    record = _one_record(tenant_a)
    assert response["history-item-id"] == str(record.pk)
    assert response["x-character-count"] == str(len(FIRST) + len(SECOND))
    assert IGNORED_FIELDS_HEADER not in response


def test_it_streams_a_dialogue(tenant_a: TenantCtx, joe2: Voice) -> None:
    response = _post(tenant_a, "/stream")
    assert response.status_code == 200
    _seconds(b"".join(response.streaming_content))
    _one_record(tenant_a)


def test_with_timestamps_gives_voice_segments(tenant_a: TenantCtx, joe2: Voice) -> None:
    response = _post(tenant_a, "/with-timestamps")
    assert response.status_code == 200, response.content
    body = response.json()
    seconds = _seconds(base64.b64decode(body["audio_base64"]))
    _check_segments(body["voice_segments"], body["alignment"]["characters"])
    assert body["voice_segments"][-1]["end_time_seconds"] <= seconds + 0.01
    assert body["normalized_alignment"]["characters"]
    _one_record(tenant_a)


def test_stream_with_timestamps_gives_voice_segments_chunk_by_chunk(tenant_a: TenantCtx, joe2: Voice) -> None:
    response = _post(tenant_a, "/stream/with-timestamps")
    assert response.status_code == 200
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines() if line]
    assert len(lines) >= 2
    _seconds(b"".join(base64.b64decode(line["audio_base64"]) for line in lines))
    characters = [c for line in lines if line["alignment"] for c in line["alignment"]["characters"]]
    segments = [s for line in lines for s in line["voice_segments"]]
    # A turn cut over two chunks is two segments of the same turn; merged, they are the whole answer's.
    merged: list[dict[str, Any]] = []
    for segment in segments:
        if merged and merged[-1]["dialogue_input_index"] == segment["dialogue_input_index"]:
            merged[-1] = {**merged[-1], "character_end_index": segment["character_end_index"]}
            merged[-1]["end_time_seconds"] = segment["end_time_seconds"]
        else:
            merged.append(dict(segment))
    _check_segments(merged, characters)
    _one_record(tenant_a)


def test_the_pause_between_turns_is_a_setting(tenant_a: TenantCtx, joe2: Voice, settings: Any) -> None:
    body = {"inputs": DIALOGUE, "seed": 11}
    settings.TTS_DIALOGUE_PAUSE_MS = 0
    short = _seconds(_post(tenant_a, body=body).content)
    settings.TTS_DIALOGUE_PAUSE_MS = 1000
    long = _seconds(_post(tenant_a, body=body).content)
    assert long - short == pytest.approx(1.0, abs=0.01)


def test_the_seed_applies_to_every_turn(tenant_a: TenantCtx, joe2: Voice, settings: Any) -> None:
    settings.TTS_AUDIO_CACHE_ENABLED = False
    first = _post(tenant_a, body={"inputs": DIALOGUE, "seed": 5}).content
    again = _post(tenant_a, body={"inputs": DIALOGUE, "seed": 5}).content
    other = _post(tenant_a, body={"inputs": DIALOGUE, "seed": 6}).content
    assert first == again and first != other


def test_another_voice_is_another_cache_entry(tenant_a: TenantCtx, joe2: Voice) -> None:
    body = {"inputs": DIALOGUE, "seed": 3}
    assert _post(tenant_a, body=body)["x-cache"] == "miss"
    assert _post(tenant_a, body=body)["x-cache"] == "hit"
    swapped = {"inputs": _inputs((FIRST, "joe2"), (SECOND, "joe")), "seed": 3}
    assert _post(tenant_a, body=swapped)["x-cache"] == "miss"


def test_a_dictionary_applies_to_a_turn(tenant_a: TenantCtx, joe2: Voice) -> None:
    rules = [{"type": "alias", "string_to_replace": "UN", "alias": "United Nations General Assembly"}]
    made = tenant_a.client().post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": "d", "rules": rules}, format="json"
    )
    assert made.status_code == 200, made.content
    turns = _inputs(("Good morning.", "joe"), ("The UN met today.", "joe2"))
    locators = [{"pronunciation_dictionary_id": made.json()["id"]}]
    plain = _post(tenant_a, body={"inputs": turns, "seed": 1})
    aliased = _post(tenant_a, body={"inputs": turns, "seed": 1, "pronunciation_dictionary_locators": locators})
    assert plain.status_code == aliased.status_code == 200
    spoken = "The United Nations General Assembly met today."
    longer = _seconds(aliased.content, text=f"Good morning.\n{spoken}")
    assert longer > _seconds(plain.content, text="Good morning.\nThe UN met today.") + 0.8
    # Billed as the existing rule bills a rewritten text: the spoken form when it is longer.
    assert int(aliased["x-character-count"]) == len("Good morning.") + len(spoken)
    record = SynthesisRecord.objects.get(pk=aliased["history-item-id"])
    assert record.settings["pronunciation_dictionary_locators"][0]["pronunciation_dictionary_id"] == made.json()["id"]


def test_it_names_the_fields_it_ignores(tenant_a: TenantCtx, joe2: Voice) -> None:
    body = {"inputs": DIALOGUE, "settings": {"similarity": 0.3, "stability": 0.8}, "use_pvc_as_ivc": True}
    response = _post(tenant_a, body=body)
    assert response.status_code == 200, response.content
    assert response[IGNORED_FIELDS_HEADER] == "settings.similarity, use_pvc_as_ivc"


@pytest.fixture
def other_model_voice(joe: Voice) -> Voice:
    joe_version = ModelVersion.objects.get(model_id=joe.model_id)
    second_version(joe_version, model_id="other-model", version="1", status=ModelVersion.Status.ACTIVE)
    return Voice.objects.create(voice_id="other", name="Other", language="en", model_id="other-model")


@pytest.mark.parametrize(
    ("inputs", "status", "code", "param"),
    [
        pytest.param([], 400, "empty_inputs", "inputs", id="no-inputs"),
        pytest.param(_inputs(("Hello.", "joe"), ("   ", "joe2")), 400, "empty_text", "inputs[1].text", id="blank"),
        pytest.param(_inputs(("Hello.", "joe"), ("Hi.", "nobody")), 404, "voice_not_found", "inputs[1].voice_id"),
        pytest.param(_inputs(("Hello.", "joe"), ("Hi.", "other")), 422, "dialogue_models_differ", "inputs[1].voice_id"),
        pytest.param(_inputs(("Hello.", "joe"), ("Hi.", "joe2"), ("Hey.", "other")), 400, "too_many_voices", "inputs"),
        pytest.param(_inputs(*[("Hello.", "joe")] * 4), 400, "too_many_inputs", "inputs", id="turns"),
        pytest.param(_inputs(("a" * 20, "joe"), ("b" * 20, "joe2")), 413, "max_character_limit_exceeded", "inputs"),
        pytest.param([{"text": "Hello."}], 400, "invalid_request", "inputs.0.voice_id", id="no-voice"),
    ],
)
def test_the_limits_name_the_field(
    joe2: Voice,
    other_model_voice: Voice,
    settings: Any,
    inputs: list[dict[str, str]],
    status: int,
    code: str,
    param: str,
) -> None:
    settings.TTS_DIALOGUE_MAX_VOICES = 2
    settings.TTS_DIALOGUE_MAX_INPUTS = 3
    ctx = make_tenant("limits", per_request=30)
    for route in ("", "/stream", "/with-timestamps", "/stream/with-timestamps"):
        response = _post(ctx, route, body={"inputs": inputs})
        assert response.status_code == status, response.content
        detail = response.json()["detail"]
        assert (detail["status"], detail["param"]) == (code, param), detail
    assert not SynthesisRecord.objects.filter(tenant=ctx.tenant).exists()


def test_another_tenants_voice_is_not_found(tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice) -> None:
    Voice.objects.create(voice_id="theirs", name="Theirs", language="en", model_id=joe.model_id, tenant=tenant_b.tenant)
    response = _post(tenant_a, body={"inputs": _inputs(("Hello.", "joe"), ("Hi.", "theirs"))})
    assert response.status_code == 404
    assert response.json()["detail"]["param"] == "inputs[1].voice_id"


def test_the_fields_of_text_to_speech_apply_to_the_dialogue(tenant_a: TenantCtx, joe2: Voice, settings: Any) -> None:
    settings.TTS_AUDIO_CACHE_ENABLED = False
    base = {"inputs": DIALOGUE, "seed": 2}

    def audio(**fields: Any) -> bytes:
        response = _post(tenant_a, body={**base, **fields})
        assert response.status_code == 200, response.content
        return bytes(response.content)

    plain = audio()
    assert audio(settings={"stability": 1.0}) != plain
    assert audio(future_text="And then they all went home.") != plain
    assert audio(previous_text="He asked the old sailor.") != plain
    numbers = _inputs(("It costs 42 dollars.", "joe"), ("No, 57.", "joe2"))
    assert audio(inputs=numbers, apply_text_normalization="on") != audio(inputs=numbers, apply_text_normalization="off")
    quiet = tenant_a.client().post(f"{URL}?output_format={FORMAT}&enable_logging=false", base, format="json")
    assert quiet.status_code == 200
    assert SynthesisRecord.objects.get(pk=quiet["history-item-id"]).text == ""


@pytest.mark.parametrize(
    ("fields", "status", "param"),
    [
        ({"model_id": "no-such-model"}, 400, "model_id"),
        ({"language_code": "ja"}, 422, "language_code"),
        ({"previous_request_ids": ["no-such-request"]}, 400, "previous_request_ids"),
        ({"seed": -1}, 400, "seed"),
        ({"settings": {"stability": 3}}, 400, "settings.stability"),
    ],
)
def test_bad_fields_are_named(
    tenant_a: TenantCtx, joe2: Voice, fields: dict[str, Any], status: int, param: str
) -> None:
    response = _post(tenant_a, body={"inputs": DIALOGUE, **fields})
    assert response.status_code == status, response.content
    assert response.json()["detail"]["param"] == param


# Each honoured field of the dialogue's body and query, and the test here that shows it.
HONOURED = {
    "inputs": "test_it_speaks_a_dialogue_as_one_synthesis",
    "model_id": "test_bad_fields_are_named",
    "language_code": "test_bad_fields_are_named",
    "settings.stability": "test_the_fields_of_text_to_speech_apply_to_the_dialogue",
    "seed": "test_the_seed_applies_to_every_turn",
    "pronunciation_dictionary_locators": "test_a_dictionary_applies_to_a_turn",
    "apply_text_normalization": "test_the_fields_of_text_to_speech_apply_to_the_dialogue",
    "previous_text": "test_the_fields_of_text_to_speech_apply_to_the_dialogue",
    "future_text": "test_the_fields_of_text_to_speech_apply_to_the_dialogue",
    "previous_request_ids": "test_bad_fields_are_named",
    "next_request_ids": "test_bad_fields_are_named",
    "output_format": "test_it_speaks_a_dialogue_as_one_synthesis",
    "enable_logging": "test_the_fields_of_text_to_speech_apply_to_the_dialogue",
}


def test_every_field_is_honoured_or_named_ignored() -> None:
    from tts.api.dialogue import DialogueQuerySerializer

    def names(serializer: Any, prefix: str = "") -> set[str]:
        found: set[str] = set()
        for name, field in serializer.fields.items():
            if hasattr(field, "fields") and not isinstance(field, type):
                found |= names(field, f"{prefix}{name}.")
            else:
                found.add(prefix + name)
        return found

    fields = names(TextToDialogueInputSerializer()) | names(DialogueQuerySerializer())
    engine_bound = {name for name, spec in DIALOGUE_IGNORED.items() if spec.engines}
    assert fields == (set(HONOURED) | set(DIALOGUE_IGNORED)), fields ^ (set(HONOURED) | set(DIALOGUE_IGNORED))
    assert set(HONOURED) & set(DIALOGUE_IGNORED) == engine_bound
    for test in HONOURED.values():
        assert test in globals(), test


def test_each_turn_is_made_in_its_own_voice(tenant_a: TenantCtx, joe2: Voice, monkeypatch: pytest.MonkeyPatch) -> None:
    from tts.synthesis.stages import engine as engine_stage

    joe2.speaker_index = 3  # joe has one speaker: the engine is still handed 0, the spy sees which voice spoke
    joe2.save()
    original = engine_stage.segment_params
    speakers: list[int] = []

    def spy(engine: Any, segment: Any, *, speaker_index: int, **knobs: Any) -> Any:
        speakers.append(speaker_index)
        return original(engine, segment, speaker_index=0, **knobs)

    monkeypatch.setattr(engine_stage, "segment_params", spy)
    turns = _inputs(("One.", "joe2"), ("Two.", "joe"), ("Three.", "joe2"))
    response = _post(tenant_a, body={"inputs": turns})
    assert response.status_code == 200, response.content
    assert speakers == [3, 0, 3]


def test_the_engine_time_budget_covers_the_whole_dialogue(tenant_a: TenantCtx, joe2: Voice) -> None:
    # Each turn alone fits the budget; the dialogue, one request, does not: refused before any work.
    tenant_a.tenant.plan.max_engine_seconds_per_request = 1.0
    tenant_a.tenant.plan.save(update_fields=["max_engine_seconds_per_request"])
    turn = "The harbour was quiet that morning, and the boats rocked against the old stone wall."
    alone = _post(tenant_a, body={"inputs": _inputs((turn, "joe"))})
    assert alone.status_code == 200, alone.content
    turns = _inputs(*[(turn, "joe" if i % 2 else "joe2") for i in range(6)])
    response = _post(tenant_a, body={"inputs": turns})
    assert response.status_code == 413, response.content
    assert (response.json()["detail"]["status"], response.json()["detail"]["param"]) == (
        "engine_time_exceeded",
        "inputs",
    )
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant).count() == 1


def test_a_hostile_body_is_refused_naming_the_field(tenant_a: TenantCtx, settings: Any) -> None:
    """Bounded where the body is read, before any voice is looked up: a turn's text past
    TTS_DIALOGUE_MAX_TURN_CHARS (on every route and on a dialogue job) and an overlong output_format."""
    settings.TTS_DIALOGUE_MAX_TURN_CHARS = 50
    inputs = _inputs(("a" * 50, "joe"), ("b" * 51, "joe2"))
    for route in ("", "/stream", "/with-timestamps", "/stream/with-timestamps"):
        response = _post(tenant_a, route, body={"inputs": inputs})
        assert response.status_code == 400, response.content
        detail = response.json()["detail"]
        assert detail["param"] == "inputs.1.text" and "50 characters" in detail["message"], detail
    job = tenant_a.client().post("/v1/jobs", {"inputs": inputs, "output_format": FORMAT}, format="json")
    assert job.status_code == 400 and job.json()["detail"]["param"] == "inputs.1.text", job.content
    response = _post(tenant_a, body={"inputs": _inputs(("Hello.", "joe"))}, fmt="x" * 65)
    assert response.status_code == 400 and response.json()["detail"]["param"] == "output_format", response.content
    assert not SynthesisRecord.objects.exists()
