"""``GET /v1/usage/character-stats``: characters per day, in ElevenLabs' shape
(``{"time": [ms, ...], "usage": {"All": [n, ...]}}``), read from the daily roll-up.

``breakdown_type`` (``api_keys``, ``voice``, ``model``, ``request_source``)
splits ``usage`` into one series per key, voice, model or source, as
ElevenLabs does; those come from the history (``tts.usage.breakdown``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.errors import SynthesisError
from tts.usage import BREAKDOWNS, daily_usage, usage_breakdown

from .openapi import error_responses, json_object

_MAX_DAYS = 366 * 2
# The last millisecond before 9999-12-31 (UTC): the day after it must still be a date (a 500 before).
MAX_UNIX_MS = 253_402_214_399_999


class CharacterStatsQuerySerializer(serializers.Serializer):
    start_unix = serializers.IntegerField(
        min_value=0, max_value=MAX_UNIX_MS, help_text="Start, in milliseconds since the epoch (UTC)."
    )
    end_unix = serializers.IntegerField(
        min_value=0, max_value=MAX_UNIX_MS, help_text="End, in milliseconds since the epoch (UTC)."
    )
    aggregation_interval = serializers.ChoiceField(choices=["day", "cumulative"], default="day")
    metric = serializers.ChoiceField(
        choices=["characters", "credits", "requests", "audio_seconds"], default="characters"
    )
    breakdown_type = serializers.ChoiceField(
        choices=list(BREAKDOWNS),
        default="none",
        help_text="Split usage per API key (api_keys), voice, model or request_source; none gives 'All'.",
    )
    include_workspace_metrics = serializers.BooleanField(required=False, default=False)


def _day_ms(day: dt.date) -> int:
    return int(dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC).timestamp() * 1000)


@extend_schema_view(
    get=extend_schema(
        operation_id="usage_character_stats",
        tags=["user"],
        summary="Characters used per day",
        parameters=[CharacterStatsQuerySerializer],
        responses={
            200: json_object(
                '{"time": [unix ms per day], "usage": {"All": [characters]}}; with a breakdown_type, one '
                "series per API key, voice, model or source instead of All"
            ),
            **error_responses("elevenlabs", 400, 403),
        },
    )
)
class CharacterStatsApi(APIView):
    required_scope = Scope.USER_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        query = CharacterStatsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q: dict[str, Any] = query.validated_data
        first = dt.datetime.fromtimestamp(q["start_unix"] / 1000, tz=dt.UTC).date()
        last = dt.datetime.fromtimestamp(q["end_unix"] / 1000, tz=dt.UTC).date()
        if last < first:
            raise SynthesisError(
                "end_unix must not be before start_unix.", code="invalid_range", status=400, field="end_unix"
            )
        if (last - first).days > _MAX_DAYS:
            raise SynthesisError(
                f"The range may span at most {_MAX_DAYS} days.",
                code="invalid_range",
                status=400,
                field="start_unix",
            )
        metric = "characters" if q["metric"] == "credits" else q["metric"]
        if q["breakdown_type"] != "none":
            table = usage_breakdown(request_tenant(request), first, last, q["breakdown_type"])
            series = table.series[metric]
            if q["aggregation_interval"] == "cumulative":
                return Response({"time": [_day_ms(first)], "usage": {k: [sum(v)] for k, v in series.items()}})
            return Response({"time": [_day_ms(d) for d in table.days], "usage": series})
        rows = daily_usage(request_tenant(request), first, last)
        days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
        values = [float(getattr(rows[d], metric)) if d in rows else 0.0 for d in days]
        if q["aggregation_interval"] == "cumulative":
            return Response({"time": [_day_ms(first)], "usage": {"All": [sum(values)]}})
        return Response({"time": [_day_ms(d) for d in days], "usage": {"All": values}})
