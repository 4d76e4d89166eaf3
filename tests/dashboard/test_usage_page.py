"""Usage by day split by API key, voice, model and source: the page, its CSV, and the API's breakdown_type."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.test import Client
from django.utils import timezone

from accounts.keys import api_key_create
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord

URL = "/v1/usage/character-stats"


def ms(day: dt.date) -> int:
    return int(dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.fixture
def spread(tenant_a: TenantCtx, tenant_b: TenantCtx) -> dict[str, object]:
    """Three days of alpha's usage over two keys (and the dashboard), two voices, two models, three sources."""
    now = timezone.now().replace(hour=12)
    second = api_key_create(tenant=tenant_a.tenant, name="batch").api_key
    rows = [
        # days ago, key, voice, model, source, characters
        (0, tenant_a.api_key, "joe", "en_US-joe-medium", "elevenlabs", 100),
        (0, second, "emma", "en_GB-emma-medium", "openai", 40),
        (0, None, "joe", "en_US-joe-medium", "playground", 7),
        (2, tenant_a.api_key, "joe", "en_US-joe-medium", "elevenlabs", 300),
        (2, second, "joe", "en_US-joe-medium", "job", 1000),
    ]
    for days, key, voice, model, source, chars in rows:
        SynthesisRecord.objects.create(
            tenant=tenant_a.tenant, api_key=key, voice_id=voice, model_id=model, source=source,
            characters=chars, output_format="mp3_44100_128", status="success", duration_s=chars / 15,
            created_at=now - dt.timedelta(days=days),
        )  # fmt: skip
    SynthesisRecord.objects.create(
        tenant=tenant_b.tenant,
        voice_id="joe",
        characters=5,
        output_format="mp3_44100_128",
        source="openai",
        created_at=now,
    )
    return {"today": now.date(), "key": tenant_a.api_key, "second": second}


def test_the_api_breaks_usage_down_as_elevenlabs_does(tenant_a: TenantCtx, spread: dict) -> None:
    today = spread["today"]
    first = today - dt.timedelta(days=2)
    query = f"?start_unix={ms(first)}&end_unix={ms(today)}"
    client = tenant_a.client()
    by_voice = client.get(URL + query + "&breakdown_type=voice").json()
    assert by_voice["time"] == [ms(first), ms(first + dt.timedelta(days=1)), ms(today)]
    assert by_voice["usage"] == {"joe": [1300.0, 0.0, 107.0], "emma": [0.0, 0.0, 40.0]}
    by_key = client.get(URL + query + "&breakdown_type=api_keys").json()["usage"]
    key, second = spread["key"], spread["second"]
    assert by_key == {
        f"alpha key (tts_{key.prefix})": [300.0, 0.0, 100.0],
        f"batch (tts_{second.prefix})": [1000.0, 0.0, 40.0],
        "No API key (dashboard)": [0.0, 0.0, 7.0],
    }
    by_model = client.get(URL + query + "&breakdown_type=model&metric=requests").json()["usage"]
    assert by_model == {"en_US-joe-medium": [2.0, 0.0, 2.0], "en_GB-emma-medium": [0.0, 0.0, 1.0]}
    by_source = client.get(URL + query + "&breakdown_type=request_source&aggregation_interval=cumulative").json()
    assert by_source["usage"] == {"elevenlabs": [400.0], "job": [1000.0], "openai": [40.0], "playground": [7.0]}
    bad = client.get(URL + query + "&breakdown_type=region")
    assert bad.status_code == 400 and "breakdown_type" in bad.content.decode()


def test_the_page_shows_the_breakdown_and_exports_it(tenant_a: TenantCtx, owner_a: Client, spread: dict) -> None:
    today = spread["today"]
    first = today - dt.timedelta(days=2)
    page = owner_a.get(f"/usage/?date_from={first}&date_to={today}&breakdown=voice")
    assert page.status_code == 200
    html = page.content.decode()
    assert "1,447 in total" in html or "1447 in total" in html
    charts = page.context["charts"]
    assert [d["label"] for d in charts["characters"]["datasets"]] == ["joe", "emma"]
    assert charts["requests"]["datasets"][0]["data"] == [2.0, 0.0, 2.0]
    assert [(r["label"], r["characters"], r["requests"]) for r in page.context["summary"]] == [
        ("joe", 1407, 4),
        ("emma", 40, 1),
    ]
    assert f"/usage.csv?date_from={first}&amp;date_to={today}&amp;breakdown=voice" in html
    exported = owner_a.get(f"/usage.csv?date_from={first}&date_to={today}&breakdown=request_source")
    assert exported["Content-Type"].startswith("text/csv")
    assert f'filename="usage_alpha_{first}_{today}_request_source.csv"' in exported["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(exported.content.decode())))
    assert rows[0] == ["day", "source", "characters", "requests", "audio_seconds"]
    assert [first.isoformat(), "job", "1000", "1", "66.667"] in rows
    assert [today.isoformat(), "playground", "7", "1", "0.467"] in rows
    assert sum(int(r[2]) for r in rows[1:]) == 1447  # beta's 5 are not here


def test_it_defaults_to_the_last_30_days_and_names_bad_ranges(owner_a: Client, tenant_a: TenantCtx) -> None:
    page = owner_a.get("/usage/")
    assert page.status_code == 200 and len(page.context["table"].days) == 30
    assert "Nothing was synthesized in this range." in page.content.decode()
    backwards = owner_a.get("/usage/?date_from=2026-05-02&date_to=2026-05-01")
    assert backwards.status_code == 400 and "on or after" in backwards.content.decode()
    too_long = owner_a.get("/usage.csv?date_from=2020-01-01&date_to=2026-01-01")
    assert too_long.status_code == 400 and "at most 366 days" in too_long.content.decode()


@pytest.mark.parametrize("name", ['=HYPERLINK("https://evil.example","x")', "+1+1", "-2", "@SUM(A1)", "\tTab", "\rCR"])
def test_a_key_name_never_becomes_a_formula_in_the_csv(tenant_a: TenantCtx, owner_a: Client, name: str) -> None:
    key = api_key_create(tenant=tenant_a.tenant, name=name).api_key
    SynthesisRecord.objects.create(
        tenant=tenant_a.tenant, api_key=key, voice_id="joe", model_id="en_US-joe-medium", source="elevenlabs",
        characters=12, output_format="mp3_44100_128", status="success", duration_s=1.0,
    )  # fmt: skip
    today = timezone.now().date()
    exported = owner_a.get(f"/usage.csv?date_from={today}&date_to={today}&breakdown=api_keys")
    assert exported.status_code == 200
    rows = list(csv.reader(io.StringIO(exported.content.decode(), newline="")))
    labels = [row[1] for row in rows[1:]]
    assert any(label.startswith("'" + name) for label in labels), labels
    assert not any(label.startswith(tuple("=+-@\t\r")) for label in labels)
    assert rows[0] == ["day", "api_key", "characters", "requests", "audio_seconds"]


def test_every_csv_export_goes_through_the_safe_writer() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    raw = [
        str(path.relative_to(root))
        for package in ("accounts", "tts", "infra", "ttsplatform")
        for path in (root / package).rglob("*.py")
        if path.name != "csv_cells.py" and ("csv.writer(" in path.read_text() or "csv.DictWriter(" in path.read_text())
    ]
    assert not raw, f"CSV written without infra.csv_cells.csv_writer: {raw}"


def test_deleting_history_leaves_usage_equal_to_the_bill(tenant_a: TenantCtx, owner_a: Client, joe: object) -> None:
    """Usage, its charts and its export count what was billed whatever happens to history (#40 item 6):
    speak twice, delete one item in History, and every figure still matches the quota."""
    from accounts.models import DailyUsage, Usage
    from tts.usage import rollup_usage

    client = tenant_a.client()
    ids = [
        client.post("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": text}, format="json")["history-item-id"]
        for text in ("The first thing said.", "And a second, longer thing that was said.")
    ]
    assert owner_a.post(f"/history/{ids[0]}/delete/").status_code == 302
    assert ids[0] not in owner_a.get("/history/").content.decode()
    quota = Usage.objects.get(tenant=tenant_a.tenant)
    assert (quota.characters, quota.requests) == (
        len("The first thing said.") + len("And a second, longer thing that was said."),
        2,
    )
    today = timezone.now().astimezone(dt.UTC).date()
    exported = owner_a.get(f"/usage.csv?date_from={today}&date_to={today}&breakdown=none")
    rows = list(csv.reader(io.StringIO(exported.content.decode())))[1:]
    assert (sum(int(r[2]) for r in rows), sum(int(r[3]) for r in rows)) == (quota.characters, quota.requests)
    page = owner_a.get(f"/usage/?date_from={today}&date_to={today}&breakdown=voice")
    assert [(r["characters"], r["requests"]) for r in page.context["summary"]] == [(quota.characters, 2)]
    start = ms(today)
    stats = client.get(f"{URL}?start_unix={start}&end_unix={start + 86_400_000}").json()
    assert sum(stats["usage"]["All"]) == quota.characters
    rollup_usage(days=1)
    rolled = DailyUsage.objects.get(tenant=tenant_a.tenant, day=today)
    assert (rolled.characters, rolled.requests) == (quota.characters, quota.requests)
