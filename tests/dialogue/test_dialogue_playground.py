"""The playground's dialogue mode on the server: ``/playground/dialogue/stream`` speaks
text-to-dialogue's body for the dashboard's session (a member, with the CSRF token), as
``/v1/text-to-dialogue/stream`` does for a key: one playground history item, the same bill,
the route's refusals naming their field."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.audio_checks import assert_speech, decode_audio
from tests.dashboard.conftest import login
from tests.fixtures import TenantCtx, make_tenant
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

URL = "/playground/dialogue/stream?output_format=pcm_22050"
FIRST = "Is the harbour open today?"
SECOND = "Yes, the boats left at dawn."
DIALOGUE = [{"text": FIRST, "voice_id": "joe"}, {"text": SECOND, "voice_id": "joe2"}]


@pytest.fixture
def joe2(joe: Voice) -> Voice:
    return Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)


def _post(client: Client, body: dict[str, Any]) -> Any:
    return client.post(URL, body, content_type="application/json")


def test_it_streams_the_dialogue_into_the_playground_history(tenant_a: TenantCtx, joe2: Voice) -> None:
    response = _post(login(tenant_a), {"inputs": DIALOGUE})
    assert response.status_code == 200, getattr(response, "content", b"")
    audio = b"".join(response.streaming_content)
    samples, rate = decode_audio(audio, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=f"{FIRST}\n{SECOND}", tolerance=0.6)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.source == SynthesisRecord.Source.PLAYGROUND and record.api_key_id is None
    assert record.status == SynthesisRecord.Status.SUCCESS and record.text == f"{FIRST}\n{SECOND}"
    assert record.characters == int(response["x-character-count"]) == len(FIRST) + len(SECOND)
    assert record.settings["dialogue_inputs"] == [{"voice_id": "joe"}, {"voice_id": "joe2"}]
    recent = login(tenant_a).get("/playground/recent/").json()["items"]
    assert len(recent) == 1 and FIRST in recent[0]["text"] and SECOND in recent[0]["text"]


def test_it_refuses_bad_turns_naming_the_field(tenant_a: TenantCtx, joe2: Voice) -> None:
    blank = _post(login(tenant_a), {"inputs": [DIALOGUE[0], {"text": " ", "voice_id": "joe2"}]})
    assert blank.status_code == 400 and blank.json()["detail"]["param"] == "inputs[1].text"
    unknown = _post(login(tenant_a), {"inputs": [DIALOGUE[0], {"text": "Hi.", "voice_id": "nobody"}]})
    assert unknown.status_code == 404 and unknown.json()["detail"]["param"] == "inputs[1].voice_id"
    assert not SynthesisRecord.objects.exists()


def test_it_speaks_only_for_a_logged_in_member_with_the_csrf_token(tenant_a: TenantCtx, joe2: Voice) -> None:
    assert _post(Client(), {"inputs": DIALOGUE}).status_code in (401, 403)
    assert _post(login(tenant_a, enforce_csrf=True), {"inputs": DIALOGUE}).status_code == 403
    assert not SynthesisRecord.objects.exists()


def test_a_second_tenants_session_does_not_find_this_tenants_voice(tenant_a: TenantCtx, joe2: Voice) -> None:
    joe2.tenant = tenant_a.tenant
    joe2.save(update_fields=["tenant"])
    beta = make_tenant("beta")
    response = _post(login(beta), {"inputs": DIALOGUE})
    assert response.status_code == 404 and response.json()["detail"]["param"] == "inputs[1].voice_id"
    assert _post(login(tenant_a), {"inputs": DIALOGUE}).status_code == 200
