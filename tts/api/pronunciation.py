"""Pronunciation dictionaries in ElevenLabs' shape (``/v1/pronunciation-dictionaries``).

Create from a PLS file or from rules, add, remove or set rules (each change a
new version), list, get, and download a version as PLS. Requests use them
with ``pronunciation_dictionary_locators`` (tts/pronunciation/dictionaries.py).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.models import PronunciationDictionary, PronunciationDictionaryVersion
from tts.pronunciation import (
    dictionary_change,
    dictionary_create,
    dictionary_create_from_pls,
    dictionary_get,
    latest_version,
    version_get,
)
from tts.text.lexicon import Rule, to_pls

from .openapi import error_responses, json_object

TAGS = ["pronunciation-dictionaries"]


class RuleSerializer(serializers.Serializer):
    """One rule; the lengths of its strings are the service's bounds (``TTS_DICTIONARY_MAX_*``,
    ``rules[i].alias`` named when one is passed)."""

    type = serializers.ChoiceField(choices=["alias", "phoneme"])
    string_to_replace = serializers.CharField()
    alias = serializers.CharField(required=False, allow_blank=True)
    phoneme = serializers.CharField(required=False, allow_blank=True)
    alphabet = serializers.CharField(required=False, max_length=16)
    case_sensitive = serializers.BooleanField(required=False, allow_null=True)
    word_boundaries = serializers.BooleanField(required=False, allow_null=True)


class FromRulesSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    rules = RuleSerializer(many=True)
    workspace_access = serializers.CharField(required=False, allow_null=True)


class FromFileSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    file = serializers.FileField()
    workspace_access = serializers.CharField(required=False, allow_null=True)


class RulesSerializer(serializers.Serializer):
    rules = RuleSerializer(many=True)


class RuleStringsSerializer(serializers.Serializer):
    rule_strings = serializers.ListField(child=serializers.CharField(max_length=500))


class ListQuerySerializer(serializers.Serializer):
    cursor = serializers.CharField(required=False)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=100, default=30)


def _unix(value: Any) -> int:
    return int(value.timestamp())


def _metadata(d: PronunciationDictionary, latest: PronunciationDictionaryVersion) -> dict[str, Any]:
    return {
        "id": d.dictionary_id,
        "latest_version_id": latest.version_id,
        "latest_version_rules_num": len(latest.rules),
        "name": d.name,
        "permission_on_resource": "admin",
        "created_by": d.created_by,
        "creation_time_unix": _unix(d.created_at),
        "archived_time_unix": _unix(d.archived_at) if d.archived_at else None,
        "description": d.description or None,
    }


def _created(d: PronunciationDictionary, version: PronunciationDictionaryVersion) -> dict[str, Any]:
    return {
        "id": d.dictionary_id,
        "name": d.name,
        "created_by": d.created_by,
        "creation_time_unix": _unix(d.created_at),
        "version_id": version.version_id,
        "version_rules_num": len(version.rules),
        "description": d.description or None,
        "permission_on_resource": "admin",
    }


def _changed(version: PronunciationDictionaryVersion) -> dict[str, Any]:
    return {
        "id": version.dictionary.dictionary_id,
        "version_id": version.version_id,
        "version_rules_num": len(version.rules),
    }


def _creator(request: Request) -> str:
    key = getattr(request, "auth", None)
    return str(getattr(key, "name", "") or "")


class _Base(APIView):
    required_scope = Scope.TTS
    error_dialect = "elevenlabs"


@extend_schema_view(
    post=extend_schema(
        operation_id="pronunciation_dictionaries_add_from_rules",
        tags=TAGS,
        request=FromRulesSerializer,
        responses={200: json_object("The new dictionary and its first version."), **error_responses("elevenlabs", 400)},
    )
)
class AddFromRulesApi(_Base):
    def post(self, request: Request) -> Response:
        body = FromRulesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        d, version = dictionary_create(
            tenant=request_tenant(request),
            name=data["name"],
            description=data.get("description") or "",
            rules=[dict(r) for r in data["rules"]],
            created_by=_creator(request),
        )
        return Response(_created(d, version))


@extend_schema_view(
    post=extend_schema(
        operation_id="pronunciation_dictionaries_add_from_file",
        tags=TAGS,
        request={"multipart/form-data": FromFileSerializer},
        responses={200: json_object("The new dictionary and its first version."), **error_responses("elevenlabs", 400)},
    )
)
class AddFromFileApi(_Base):
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def post(self, request: Request) -> Response:
        body = FromFileSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        d, version = dictionary_create_from_pls(
            tenant=request_tenant(request),
            name=data["name"],
            description=data.get("description") or "",
            upload=data["file"],
            created_by=_creator(request),
        )
        return Response(_created(d, version))


@extend_schema_view(
    get=extend_schema(
        operation_id="pronunciation_dictionaries_list",
        tags=TAGS,
        parameters=[ListQuerySerializer],
        responses={200: json_object("{pronunciation_dictionaries, next_cursor, has_more}")},
    )
)
class DictionaryListApi(_Base):
    def get(self, request: Request) -> Response:
        query = ListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        tenant = request_tenant(request)
        rows = PronunciationDictionary.objects.filter(tenant=tenant, archived_at__isnull=True).order_by("-pk")
        if q.get("cursor"):
            cursor = PronunciationDictionary.objects.filter(tenant=tenant, dictionary_id=q["cursor"]).first()
            if cursor is not None:
                rows = rows.filter(pk__lt=cursor.pk)
        page = list(rows[: q["page_size"] + 1])
        more = len(page) > q["page_size"]
        page = page[: q["page_size"]]
        return Response(
            {
                "pronunciation_dictionaries": [_metadata(d, latest_version(d)) for d in page],
                "next_cursor": page[-1].dictionary_id if more and page else None,
                "has_more": more,
            }
        )


@extend_schema_view(
    get=extend_schema(
        operation_id="pronunciation_dictionaries_get",
        tags=TAGS,
        responses={200: json_object("The dictionary with its latest rules."), **error_responses("elevenlabs", 404)},
    )
)
class DictionaryDetailApi(_Base):
    def get(self, request: Request, dictionary_id: str) -> Response:
        d = dictionary_get(request_tenant(request), dictionary_id)
        latest = latest_version(d)
        return Response({**_metadata(d, latest), "rules": latest.rules})


class _RulesChange(_Base):
    def change(self, request: Request, dictionary_id: str, **kwargs: Any) -> Response:
        d = dictionary_get(request_tenant(request), dictionary_id)
        return Response(_changed(dictionary_change(d, **kwargs)))


@extend_schema_view(
    post=extend_schema(
        operation_id="pronunciation_dictionaries_add_rules",
        tags=TAGS,
        request=RulesSerializer,
        responses={200: json_object("The new version."), **error_responses("elevenlabs", 400, 404)},
    )
)
class AddRulesApi(_RulesChange):
    def post(self, request: Request, dictionary_id: str) -> Response:
        body = RulesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self.change(request, dictionary_id, add=[dict(r) for r in body.validated_data["rules"]])


@extend_schema_view(
    post=extend_schema(
        operation_id="pronunciation_dictionaries_set_rules",
        tags=TAGS,
        request=RulesSerializer,
        responses={200: json_object("The new version."), **error_responses("elevenlabs", 400, 404)},
    )
)
class SetRulesApi(_RulesChange):
    def post(self, request: Request, dictionary_id: str) -> Response:
        body = RulesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self.change(request, dictionary_id, replace=[dict(r) for r in body.validated_data["rules"]])


@extend_schema_view(
    post=extend_schema(
        operation_id="pronunciation_dictionaries_remove_rules",
        tags=TAGS,
        request=RuleStringsSerializer,
        responses={200: json_object("The new version."), **error_responses("elevenlabs", 400, 404)},
    )
)
class RemoveRulesApi(_RulesChange):
    def post(self, request: Request, dictionary_id: str) -> Response:
        body = RuleStringsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self.change(request, dictionary_id, remove=body.validated_data["rule_strings"])


@extend_schema_view(
    get=extend_schema(
        operation_id="pronunciation_dictionaries_download",
        tags=TAGS,
        responses={(200, "application/pls+xml"): bytes, **error_responses("elevenlabs", 404)},
    )
)
class DownloadApi(_Base):
    def get(self, request: Request, dictionary_id: str, version_id: str) -> HttpResponse:
        d = dictionary_get(request_tenant(request), dictionary_id)
        version = version_get(d, version_id)
        rules = [Rule.from_json(r) for r in version.rules]
        response = HttpResponse(to_pls(rules), content_type="application/pls+xml")
        response["Content-Disposition"] = f'attachment; filename="{d.dictionary_id}_{version.number}.pls"'
        return response
