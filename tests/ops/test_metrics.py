"""/metrics: Prometheus text whose counters move with the requests that were served."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_tenant
from tts.models import SynthesisRecord, Voice

TEXT = "Counters should move. Every request leaves a trace."
TTS_ROUTE = "/v1/text-to-speech/<str:voice_id>"


def scrape(**headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = Client().get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_it_counts_requests_characters_audio_and_latency(tenant_a: TenantCtx, joe: Voice) -> None:
    before = scrape()
    response = tenant_a.client().post("/v1/text-to-speech/joe?output_format=wav_22050", {"text": TEXT}, format="json")
    assert response.status_code == 200
    samples, rate = decode_audio(response.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("tts_http_requests_total", route=TTS_ROUTE, method="POST", status="200") == 1
    assert moved("tts_syntheses_total", source="elevenlabs", status="success") == 1
    assert moved("tts_characters_total", source="elevenlabs") == len(TEXT) == record.characters
    assert moved("tts_audio_seconds_total", source="elevenlabs") == pytest.approx(record.duration_s, abs=0.01)
    assert moved("tts_synthesis_latency_seconds_count", source="elevenlabs") == 1
    assert moved("tts_synthesis_ttfb_seconds_count", source="elevenlabs") == 1
    assert moved("tts_synthesis_latency_seconds_sum", source="elevenlabs") == pytest.approx(
        record.latency_ms / 1000, abs=0.002
    )
    assert moved("tts_cache_requests_total", result="miss") + moved("tts_cache_requests_total", result="hit") == 1
    assert value(after, "tts_engine_queue_depth") == 0, "nothing is left in flight"
    assert value(after, "tts_cache_hits_per_cpu_second") >= 0 and ("tts_cache_hits_per_cpu_second", ()) in after
    assert ("tts_stream_underruns_total", ()) in after and ("tts_stream_lead_seconds_count", ()) in after
    loaded = ("tts_models_loaded", (("engine", "piper-onnx"), ("model_version", str(record.model_version_id))))
    assert loaded in after, "the version that served the request is listed as loaded"


@pytest.mark.django_db
def test_it_counts_refusals_and_errors_by_route(tenant_a: TenantCtx, joe: Voice) -> None:
    poor = make_tenant("gamma", limit=3)
    before = scrape()
    refused = poor.client().post("/v1/text-to-speech/joe", {"text": "Far more than three."}, format="json")
    assert refused.status_code == 429
    missing = tenant_a.client().post("/v1/text-to-speech/nobody", {"text": "Hello."}, format="json")
    assert missing.status_code == 404
    Client().get("/no/such/page")
    after = scrape()
    assert (
        value(after, "tts_rate_limit_refusals_total", route=TTS_ROUTE)
        - value(before, "tts_rate_limit_refusals_total", route=TTS_ROUTE)
        == 1
    )
    for status in ("429", "404"):
        key = {"route": TTS_ROUTE, "method": "POST", "status": status}
        assert value(after, "tts_http_requests_total", **key) - value(before, "tts_http_requests_total", **key) == 1
    # Unknown paths share one label instead of one each.
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    assert (
        value(after, "tts_http_requests_total", **unmatched) - value(before, "tts_http_requests_total", **unmatched)
        >= 1
    )
    assert not SynthesisRecord.objects.filter(tenant=poor.tenant).exists()


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="scrape-secret")
def test_it_wants_the_token_when_one_is_set() -> None:
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert "tts_http_requests_total" in {name for name, _ in scrape(HTTP_AUTHORIZATION="Bearer scrape-secret")}


@pytest.mark.django_db
@override_settings(OPS_ALLOWED_NETWORKS=["10.1.0.0/16", "192.0.2.7"], METRICS_TOKEN="")
def test_an_address_list_limits_metrics_and_readyz() -> None:
    for path in ("/metrics", "/readyz"):
        assert Client(REMOTE_ADDR="10.1.2.3").get(path).status_code == 200
        assert Client(REMOTE_ADDR="192.0.2.7").get(path).status_code == 200
        refused = Client(REMOTE_ADDR="203.0.113.9").get(path)
        assert refused.status_code == 403 and b"not served to this address" in refused.content
    # Liveness stays open: it tells nothing.
    assert Client(REMOTE_ADDR="203.0.113.9").get("/healthz").status_code == 200


@pytest.mark.django_db
@override_settings(OPS_ALLOWED_NETWORKS=["10.1.0.0/16"], METRICS_TOKEN="scrape-secret", READYZ_NEEDS_TOKEN=True)
def test_the_token_or_the_address_list_lets_in() -> None:
    outside = Client(REMOTE_ADDR="203.0.113.9")
    for path in ("/metrics", "/readyz"):
        assert outside.get(path).status_code == 401
        assert outside.get(path, HTTP_AUTHORIZATION="Bearer scrape-secret").status_code == 200
        assert Client(REMOTE_ADDR="10.1.0.1").get(path).status_code == 200


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="scrape-secret")
def test_readyz_stays_open_to_probes_unless_asked() -> None:
    assert Client().get("/readyz").status_code == 200
    assert Client().get("/metrics").status_code == 401


@override_settings(METRICS_TOKEN="", OPS_ALLOWED_NETWORKS=[])
def test_with_nothing_set_metrics_answers_only_private_networks() -> None:
    """#41 item 6: /metrics needs a token or a private network; it is never open to the world."""
    for address in ("127.0.0.1", "10.42.0.7", "172.18.0.1", "192.168.1.20"):
        assert Client(REMOTE_ADDR=address).get("/metrics").status_code == 200, address
    public = Client(REMOTE_ADDR="203.0.113.9")
    refused = public.get("/metrics")
    assert refused.status_code == 403 and b"not served to this address" in refused.content
    assert public.get("/readyz").status_code in (200, 503)  # probes from anywhere still answered
