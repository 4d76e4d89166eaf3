"""``GET /v2/voices``: ElevenLabs' voice search, with filters and opaque page tokens.

The voices are those ``GET /v1/voices`` lists (shared ones and the tenant's own that an
active model version serves) in the same shape; the page token is signed, so a client
can only hand back one this server made, and it holds a sort key, never a tenant or a row id.
"""

from __future__ import annotations

from typing import Any

from django.core import signing
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.catalogue import VOICE_CATEGORIES, VOICE_TYPES, VoiceQuery, voices_search
from tts.errors import SynthesisError

from .fields import StrictCharField
from .openapi import error_responses, json_object
from .resources import voice_json

#: ElevenLabs' bound on ``page_size`` (and on ``voice_ids``).
MAX_PAGE_SIZE = 100
_TOKEN_SALT = "tts.api.voice_search"


class _ListParam(serializers.ListField):
    """A query parameter given once or repeated (``?voice_ids=a&voice_ids=b``), or comma-separated."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=StrictCharField(), required=False, default=list, **kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        values: list[str] = super().to_internal_value(data)
        parts = [part.strip() for value in values for part in value.split(",") if part.strip()]
        if any(len(part) > 200 for part in parts):
            raise serializers.ValidationError("Each value is at most 200 characters.")
        return parts


class VoiceSearchQuerySerializer(serializers.Serializer):
    next_page_token = StrictCharField(required=False, allow_blank=True, max_length=1000)
    page_size = serializers.IntegerField(required=False, default=10, min_value=1, max_value=MAX_PAGE_SIZE)
    search = StrictCharField(required=False, allow_blank=True, max_length=200)
    sort = serializers.ChoiceField(choices=["name", "created_at_unix"], required=False, default="name")
    sort_direction = serializers.ChoiceField(choices=["asc", "desc"], required=False, default="asc")
    voice_type = serializers.ChoiceField(choices=VOICE_TYPES, required=False)
    category = serializers.ChoiceField(choices=VOICE_CATEGORIES, required=False)
    fine_tuning_state = StrictCharField(required=False, allow_blank=True, max_length=50)
    collection_id = StrictCharField(required=False, allow_blank=True, max_length=200)
    gender = _ListParam()
    age = _ListParam()
    language = _ListParam()
    accent = _ListParam()
    use_cases = _ListParam()
    voice_ids = _ListParam()
    # Voice-library sharing options: no voice here is shared, so they are checked and change nothing.
    min_notice_period_days = serializers.IntegerField(required=False, min_value=0)
    include_custom_rates = serializers.BooleanField(required=False, default=True)
    include_live_moderated = serializers.BooleanField(required=False, default=True)
    high_quality = serializers.BooleanField(required=False, default=False)
    include_total_count = serializers.BooleanField(required=False, default=True)

    def validate_voice_ids(self, value: list[str]) -> list[str]:
        if len(value) > MAX_PAGE_SIZE:
            raise serializers.ValidationError(f"At most {MAX_PAGE_SIZE} voice ids.")
        return value


def _page_token(sort: str, descending: bool, after: tuple[str, str]) -> str:
    return signing.dumps([sort, descending, *after], salt=_TOKEN_SALT, compress=True)


def _token_start(token: str, *, sort: str, descending: bool) -> tuple[str, str]:
    """Where the page a token names starts; a 400 naming ``next_page_token`` if it is not one of
    ours or was made for another order."""
    try:
        got_sort, got_descending, key, voice_id = signing.loads(token, salt=_TOKEN_SALT)
    except (signing.BadSignature, ValueError, TypeError) as exc:
        raise SynthesisError(
            "next_page_token: not a token this server handed out.",
            code="invalid_request",
            status=400,
            field="next_page_token",
        ) from exc
    if (got_sort, got_descending) != (sort, descending):
        raise SynthesisError(
            "next_page_token: made for another sort or sort_direction; send the same ones on every page.",
            code="invalid_request",
            status=400,
            field="next_page_token",
        )
    return str(key), str(voice_id)


@extend_schema_view(
    get=extend_schema(
        operation_id="voices_search",
        tags=["voices"],
        summary="Search voices, a page at a time",
        parameters=[VoiceSearchQuerySerializer],
        responses={
            200: json_object("voices, has_more, total_count, next_page_token"),
            **error_responses("elevenlabs", 400, 403),
        },
    )
)
class VoiceSearchApi(APIView):
    required_scope = Scope.VOICES_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        params = VoiceSearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        q = params.validated_data
        tenant = request_tenant(request)
        descending = q["sort_direction"] == "desc"
        token = q.get("next_page_token") or ""
        query = VoiceQuery(
            search=q.get("search") or "",
            voice_type=q.get("voice_type") or "",
            # ElevenLabs' high_quality=true keeps the 'high_quality' category, which no voice here has.
            category="high_quality" if q["high_quality"] else q.get("category") or "",
            languages=q["language"],
            genders=q["gender"],
            ages=q["age"],
            accents=q["accent"],
            use_cases=q["use_cases"],
            voice_ids=q["voice_ids"],
            # No voice here is in a collection or fine-tuned.
            matches_nothing=bool(q.get("collection_id") or q.get("fine_tuning_state")),
            sort=q["sort"],
            descending=descending,
            page_size=q["page_size"],
            after=_token_start(token, sort=q["sort"], descending=descending) if token else None,
            count_total=q["include_total_count"],
        )
        page = voices_search(tenant, query)
        return Response(
            {
                "voices": [voice_json(v, tenant_id=tenant.pk) for v in page.voices],
                "has_more": page.has_more,
                # Skipped when include_total_count=false (a COUNT over the catalogue): 0 then.
                "total_count": page.total_count if page.total_count is not None else 0,
                "next_page_token": _page_token(q["sort"], descending, page.next_after) if page.next_after else None,
            }
        )
