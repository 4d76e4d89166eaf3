"""The two 500s of issue #32 item 3, on the routes that answered them (the front ends themselves:
``tests/text/test_front_end_fuzz.py``).

``tts/text/rules/zh.py`` called ``int()`` on a denominator past Python's 4,300-digit limit, and
``ja.py`` skipped its digit cap for an amount with a currency sign before it and two decimals:
``ValueError``, a 500 on every route. Both are read now. With a one-second audio limit the
requests stop right after the front end, at the audio estimate: a 413 naming the text, nothing
billed, no row; a job plans them (its text work is the same front end).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from accounts.models import Usage
from tests.fixtures import TenantCtx, make_kokoro
from tts.models import Job, SynthesisRecord

pytestmark = pytest.mark.django_db

CHINESE = ("zf_xiaobei", "zh", "分数是1/" + "7" * 4_400)  # a 4,400-digit denominator
JAPANESE = ("jf_alpha", "ja", "価格は€" + "1" * 30 + ".50です")  # 39 characters


def post(ctx: TenantCtx, path: str, body: dict[str, Any]) -> Any:
    return ctx.client().post(path, data=json.dumps(body), content_type="application/json")


@override_settings(TTS_MAX_AUDIO_SECONDS=1)
@pytest.mark.parametrize(("voice", "language", "text"), [CHINESE, JAPANESE], ids=["zh", "ja"])
def test_the_issues_texts_reach_the_audio_estimate_on_every_route(
    tenant_a: TenantCtx, kokoro_dir: str, voice: str, language: str, text: str
) -> None:
    make_kokoro(kokoro_dir)
    for path, body in (
        (f"/v1/text-to-speech/{voice}", {"text": text, "language_code": language}),
        (f"/v1/text-to-speech/{voice}/stream", {"text": text, "language_code": language}),
        ("/v1/audio/speech", {"model": "tts-1", "voice": voice, "input": text}),
        ("/tts", {"text": text, "speaker": voice, "language": language}),
    ):
        response = post(tenant_a, path, body)
        assert response.status_code in (400, 413), (path, response.status_code, response.content[:300])
        payload = response.json()
        detail = payload.get("detail") or payload["error"]
        assert "limit per request is 1 s" in json.dumps(detail), (path, detail)
    usage = Usage.objects.filter(tenant=tenant_a.tenant).first()
    assert usage is None or usage.characters == 0
    assert not SynthesisRecord.objects.filter(tenant=tenant_a.tenant).exists()


@pytest.mark.parametrize(("voice", "language", "text"), [CHINESE, JAPANESE], ids=["zh", "ja"])
def test_a_job_plans_them(tenant_a: TenantCtx, kokoro_dir: str, voice: str, language: str, text: str) -> None:
    make_kokoro(kokoro_dir)
    response = post(tenant_a, "/v1/jobs", {"voice_id": voice, "text": text, "language_code": language})
    assert response.status_code == 202, response.content[:300]
    job = Job.objects.get(tenant=tenant_a.tenant)
    spoken = "".join(seg["text"] for chunk in job.plan for seg in chunk["segments"])
    assert not any(ch.isdigit() and ch.isascii() for ch in spoken)  # every digit read as words
    assert job.characters == len(text)
