"""GET /v1/history/{id}/captions?format=srt|vtt: well-formed captions from the stored timings."""

from __future__ import annotations

import re

import pytest

from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

TEXT = (
    "The harbour was quiet that morning. Fishing boats rocked against the old stone wall, "
    "and gulls circled overhead in the grey light."
)
VTT_TIME = r"(\d\d):(\d\d):(\d\d)\.(\d\d\d)"
SRT_TIME = r"(\d\d):(\d\d):(\d\d),(\d\d\d)"


def _seconds(match: tuple[str, ...]) -> float:
    h, m, s, ms = (int(x) for x in match)
    return h * 3600 + m * 60 + s + ms / 1000


def _synthesize(ctx: TenantCtx) -> SynthesisRecord:
    response = ctx.client().post(
        "/v1/text-to-speech/joe/with-timestamps?output_format=pcm_16000", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200, response.content
    return SynthesisRecord.objects.get(pk=response["history-item-id"])


def _check_cues(cues: list[tuple[float, float, str]], duration: float) -> None:
    assert len(cues) >= 3  # long text is broken into several cues
    assert " ".join(text for _, _, text in cues) == TEXT
    for (start, end, text), (next_start, _, _) in zip(cues, [*cues[1:], (duration, 0, "")], strict=True):
        assert 0 <= start < end <= next_start + 1e-3, (start, end, next_start)
        assert len(text) <= 60
    assert cues[-1][1] == pytest.approx(duration, abs=0.05)


def test_it_exports_webvtt(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    record = _synthesize(tenant_a)
    response = tenant_a.client().get(f"/v1/history/{record.pk}/captions?format=vtt")
    assert response.status_code == 200
    assert response["content-type"].startswith("text/vtt")
    body = response.content.decode()
    assert body.startswith("WEBVTT\n\n")
    blocks = body.strip().split("\n\n")[1:]
    cues = []
    for block in blocks:
        timing, text = block.split("\n", 1)
        match = re.fullmatch(f"{VTT_TIME} --> {VTT_TIME}", timing)
        assert match, timing
        cues.append((_seconds(match.groups()[:4]), _seconds(match.groups()[4:]), text))
    _check_cues(cues, record.duration_s)


def test_it_exports_srt(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    record = _synthesize(tenant_a)
    response = tenant_a.client().get(f"/v1/history/{record.pk}/captions?format=srt")
    assert response.status_code == 200
    assert response["content-type"].startswith("application/x-subrip")
    blocks = response.content.decode().strip().split("\n\n")
    cues = []
    for number, block in enumerate(blocks, start=1):
        index, timing, text = block.split("\n", 2)
        assert index == str(number)
        match = re.fullmatch(f"{SRT_TIME} --> {SRT_TIME}", timing)
        assert match, timing
        cues.append((_seconds(match.groups()[:4]), _seconds(match.groups()[4:]), text))
    _check_cues(cues, record.duration_s)


def test_it_refuses_an_unknown_format(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    record = _synthesize(tenant_a)
    response = tenant_a.client().get(f"/v1/history/{record.pk}/captions?format=ass")
    assert response.status_code == 400
    assert "format" in response.content.decode()


def test_it_has_no_captions_without_timings(tenant_a: TenantCtx, joe_timed: Voice) -> None:
    response = tenant_a.client().post(
        "/v1/text-to-speech/joe?output_format=pcm_16000&enable_logging=false", {"text": "Private."}, format="json"
    )
    item = response["history-item-id"]
    response = tenant_a.client().get(f"/v1/history/{item}/captions")
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "captions_not_available"


def test_it_hides_another_tenants_captions(tenant_a: TenantCtx, tenant_b: TenantCtx, joe_timed: Voice) -> None:
    record = _synthesize(tenant_a)
    response = tenant_b.client().get(f"/v1/history/{record.pk}/captions?format=srt")
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "history_item_not_found"
