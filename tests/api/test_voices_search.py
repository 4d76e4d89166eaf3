"""GET /v2/voices: ElevenLabs' voice search (filters, sort, opaque page tokens), scoped to the tenant."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test.utils import override_settings

from tests.fixtures import TenantCtx
from tts.models import ModelVersion, Voice

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _voice(voice_id: str, name: str, *, tenant: TenantCtx | None = None, days: int = 0, **fields: object) -> Voice:
    return Voice.objects.create(
        voice_id=voice_id,
        name=name,
        model_id="en_US-joe-medium",
        tenant=tenant.tenant if tenant else None,
        created_at=START + dt.timedelta(days=days),
        **fields,
    )


def _ids(body: dict) -> list[str]:
    return [v["voice_id"] for v in body["voices"]]


@pytest.fixture
def catalogue(joe: Voice, tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    """Joe, three more shared voices, one private voice of each tenant; one voice no model serves."""
    Voice.objects.filter(pk=joe.pk).update(created_at=START)
    _voice("amy", "Amy", days=1, language="en-GB", labels={"gender": "female", "accent": "british", "age": "young"})
    _voice(
        "bruno",
        "Bruno",
        days=2,
        language="de",
        labels={"gender": "male", "use_case": "narration"},
        description="A calm storyteller",
    )
    _voice("chiara", "Chiara", days=3, language="it", labels={"gender": "female", "accent": "italian"})
    _voice("alpha-own", "Alpha Own", tenant=tenant_a, days=4, labels={"gender": "male"})
    _voice("beta-secret", "Beta Secret", tenant=tenant_b, days=5, labels={"gender": "female", "accent": "british"})
    Voice.objects.create(voice_id="unserved", name="Aaron Unserved", model_id="no-such-model")


def test_it_lists_the_tenants_voices_in_elevenlabs_shape(
    tenant_a: TenantCtx, catalogue: None, django_assert_max_num_queries
) -> None:
    with django_assert_max_num_queries(5):
        body = tenant_a.client().get("/v2/voices").json()
    assert _ids(body) == ["alpha-own", "amy", "bruno", "chiara", "joe"]
    assert body["has_more"] is False and body["total_count"] == 5 and body["next_page_token"] is None
    own, amy = body["voices"][0], body["voices"][1]
    assert own["category"] == "professional" and own["is_owner"] is True
    assert amy["category"] == "premade" and amy["is_owner"] is False
    assert amy["labels"] == {"language": "en-GB", "gender": "female", "accent": "british", "age": "young"}
    assert amy["created_at_unix"] == int((START + dt.timedelta(days=1)).timestamp())
    assert amy["high_quality_base_model_ids"] == ["en_US-joe-medium"]


def test_it_pages_with_opaque_tokens(tenant_a: TenantCtx, joe: Voice, django_assert_max_num_queries) -> None:
    for n in range(24):
        _voice(f"v{n:02d}", f"Voice {n:02d}", days=n)
    client = tenant_a.client()
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        params = {"page_size": 10} | ({"next_page_token": token} if token else {})
        with django_assert_max_num_queries(5):
            body = client.get("/v2/voices", params).json()
        pages += 1
        assert body["total_count"] == 25
        assert len(body["voices"]) == (10 if body["has_more"] else 5)
        seen += _ids(body)
        token = body["next_page_token"]
        assert (token is not None) == body["has_more"]
        if token is None:
            break
        assert "Voice" not in token and "v0" not in token  # opaque: no name or id in clear
    assert pages == 3
    assert seen == ["joe", *(f"v{n:02d}" for n in range(24))]  # by name: "Joe" < "Voice 00"


def test_a_voice_added_between_pages_neither_repeats_nor_skips_one(tenant_a: TenantCtx, joe: Voice) -> None:
    for name in ("Bea", "Cleo", "Dora"):
        _voice(name.lower(), name)
    client = tenant_a.client()
    first = client.get("/v2/voices", {"page_size": 2}).json()
    assert _ids(first) == ["bea", "cleo"]
    _voice("abe", "Abe")  # sorts before the page already read
    rest = client.get("/v2/voices", {"page_size": 2, "next_page_token": first["next_page_token"]}).json()
    assert _ids(rest) == ["dora", "joe"] and rest["has_more"] is False


def test_it_sorts_by_creation_time_both_ways(tenant_a: TenantCtx, catalogue: None) -> None:
    client = tenant_a.client()
    order: dict[str, str | int] = {"sort": "created_at_unix", "sort_direction": "desc", "page_size": 3}
    newest = client.get("/v2/voices", order).json()
    assert _ids(newest) == ["alpha-own", "chiara", "bruno"]
    rest = client.get("/v2/voices", order | {"next_page_token": newest["next_page_token"]}).json()
    assert _ids(rest) == ["amy", "joe"] and rest["next_page_token"] is None
    by_name_desc = client.get("/v2/voices", {"sort_direction": "desc"}).json()
    assert _ids(by_name_desc) == ["joe", "chiara", "bruno", "amy", "alpha-own"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("search=chi", ["chiara"]),
        ("search=storyteller", ["bruno"]),  # description
        ("search=BRITISH", ["amy"]),  # a label's value
        ("search=gender", []),  # not a label's key
        ("search=professional", ["alpha-own"]),  # the category
        ("gender=female", ["amy", "chiara"]),
        ("gender=male&accent=british", []),
        ("age=young", ["amy"]),
        ("use_cases=narration", ["bruno"]),
        ("accent=italian", ["chiara"]),
        ("language=de&language=it", ["bruno", "chiara"]),
        ("language=en", ["alpha-own", "amy", "joe"]),  # "en" matches en-GB
        ("voice_type=default", ["amy", "bruno", "chiara", "joe"]),
        ("voice_type=personal", ["alpha-own"]),
        ("voice_type=non-default", ["alpha-own"]),
        ("voice_type=community", []),
        ("category=premade", ["amy", "bruno", "chiara", "joe"]),
        ("category=professional", ["alpha-own"]),
        ("category=cloned", []),
        ("high_quality=true", []),
        ("collection_id=favourites", []),
        ("voice_ids=joe&voice_ids=amy", ["amy", "joe"]),
        ("voice_ids=joe,bruno,nope", ["bruno", "joe"]),
        ("voice_ids=unserved", []),  # no active version serves it
    ],
)
def test_it_filters_as_elevenlabs_defines(tenant_a: TenantCtx, catalogue: None, query: str, expected: list) -> None:
    body = tenant_a.client().get(f"/v2/voices?{query}").json()
    assert _ids(body) == expected
    assert body["total_count"] == len(expected)


def test_another_tenants_voices_are_never_listed(tenant_a: TenantCtx, tenant_b: TenantCtx, catalogue: None) -> None:
    client = tenant_a.client()
    for query in (
        "",
        "search=beta",
        "voice_ids=beta-secret",
        "voice_type=personal",
        "category=professional",
        "gender=female&accent=british",
        "page_size=100",
    ):
        body = client.get(f"/v2/voices?{query}").json()
        assert "beta-secret" not in _ids(body), query
    assert _ids(tenant_b.client().get("/v2/voices?voice_type=personal").json()) == ["beta-secret"]
    # A token made for tenant b pages tenant a's voices only: it holds a sort key ("Amy"), not a tenant.
    token = tenant_b.client().get("/v2/voices?page_size=1").json()["next_page_token"]
    assert _ids(client.get(f"/v2/voices?next_page_token={token}").json()) == ["bruno", "chiara", "joe"]


def test_it_skips_the_count_when_asked(tenant_a: TenantCtx, catalogue: None, django_assert_num_queries) -> None:
    client = tenant_a.client()
    client.get("/v2/voices")  # warm the key lookup (cached: a page is then the voices' query, and the count)
    with django_assert_num_queries(2) as counted:
        client.get("/v2/voices", {"page_size": 2})
    assert sum("COUNT(" in q["sql"] for q in counted.captured_queries) == 1
    with django_assert_num_queries(1) as counted:
        body = client.get("/v2/voices", {"include_total_count": "false", "page_size": "2"}).json()
    assert not any("COUNT(" in q["sql"] for q in counted.captured_queries)
    assert _ids(body) == ["alpha-own", "amy"] and body["has_more"] is True and body["total_count"] == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page_size=0", "page_size"),
        ("page_size=101", "page_size"),
        ("page_size=ten", "page_size"),
        ("sort=age", "sort"),
        ("sort_direction=up", "sort_direction"),
        ("voice_type=friends", "voice_type"),
        ("category=robot", "category"),
        ("include_total_count=maybe", "include_total_count"),
        ("voice_ids=" + ",".join(f"v{n}" for n in range(101)), "voice_ids"),
        ("&".join(f"voice_ids=v{n}" for n in range(101)), "voice_ids"),
        ("gender=" + "x" * 201, "gender"),
        ("next_page_token=not-a-token", "next_page_token"),
    ],
)
def test_it_rejects_bad_parameters_naming_the_field(tenant_a: TenantCtx, joe: Voice, query: str, field: str) -> None:
    response = tenant_a.client().get(f"/v2/voices?{query}")
    assert response.status_code == 400, response.content[:300]
    detail = response.json()["detail"]
    assert detail["param"] == field and detail["status"] == "invalid_request"
    assert field in detail["message"]


def test_a_token_is_bound_to_its_order(tenant_a: TenantCtx, catalogue: None) -> None:
    client = tenant_a.client()
    token = client.get("/v2/voices?page_size=1").json()["next_page_token"]
    response = client.get(f"/v2/voices?page_size=1&sort=created_at_unix&next_page_token={token}")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "next_page_token"


@pytest.mark.parametrize("debug", [False, True])
def test_it_needs_a_key_and_allows_get_only(tenant_a: TenantCtx, joe: Voice, debug: bool) -> None:
    from rest_framework.test import APIClient

    with override_settings(DEBUG=debug):
        anonymous = APIClient().get("/v2/voices")
        assert anonymous.status_code == 401 and anonymous.json()["detail"]["status"] == "missing_api_key"
        posted = tenant_a.client().post("/v2/voices", {}, format="json")
        assert posted.status_code == 405 and posted["Content-Type"] == "application/json"
        assert posted.json()["detail"]["status"] == "method_not_allowed"


def test_it_lists_nothing_when_no_model_is_active(tenant_a: TenantCtx, catalogue: None) -> None:
    ModelVersion.objects.update(status=ModelVersion.Status.RETIRED)
    body = tenant_a.client().get("/v2/voices").json()
    assert body == {"voices": [], "has_more": False, "total_count": 0, "next_page_token": None}
