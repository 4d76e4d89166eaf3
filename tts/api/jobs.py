"""Long-form jobs: ``/v1/jobs`` (submit, list), ``/v1/jobs/{id}`` (status and
progress), ``/v1/jobs/{id}/audio`` (one file, or a zip for a batch) and
``/v1/jobs/{id}/cancel``. Errors in the ElevenLabs dialect.

A job is one long ``text``, a batch of ``items``, or a dialogue's ``inputs`` (text-to-dialogue's
turns and ``settings``, docs/dialogue.md), each a ``JobRequest`` for ``tts.jobs``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_tenant
from accounts.models import Scope
from infra.pagination import keyset_page
from tts.errors import SynthesisError
from tts.jobs import JobRequest, characters_done, job_cancel, job_get, job_submit, jobs_for_tenant
from tts.models import Job
from tts.synthesis import DialogueTurn, output_format_for
from tts.usage import content_disposition, filename_for

from .dialogue import DialogueInputSerializer, DialogueSettingsSerializer
from .elevenlabs import DEFAULT_OUTPUT_FORMAT, DictionaryLocatorSerializer, VoiceSettingsSerializer
from .fields import StrictCharField
from .openapi import error_responses, json_object


def _unix(value: dt.datetime | None) -> int | None:
    return int(value.timestamp()) if value else None


def job_json(job: Job) -> dict[str, Any]:
    finished = job.is_finished
    return {
        "job_id": str(job.pk),
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress,
        "done_chunks": job.done_chunks,
        "total_chunks": job.total_chunks,
        "item_count": job.item_count,
        "characters": job.characters,
        "characters_done": characters_done(job) if not finished else job.characters_charged,
        "characters_charged": job.characters_charged if finished else None,
        "audio_seconds": round(job.audio_seconds, 3),
        "voice_id": job.voice_id,
        # A dialogue job's turns' voices, in order (``voice_id`` is the first's); null otherwise.
        "dialogue_inputs": (job.settings or {}).get("dialogue_inputs"),
        "model_id": job.model_id,
        "output_format": job.output_format,
        "content_type": job.content_type,
        "cancel_requested": job.cancel_requested,
        "attempts": job.attempts,
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "has_audio": bool(job.audio),
        "history_item_id": str(job.history_item_id) if job.history_item_id else None,
        "created_at_unix": _unix(job.created_at),
        "started_at_unix": _unix(job.started_at),
        "finished_at_unix": _unix(job.finished_at),
    }


def _job_or_404(request: Request, job_id: str) -> Job:
    job = job_get(request_tenant(request), job_id)
    if job is None:
        raise SynthesisError(f"Job '{job_id}' was not found.", code="job_not_found", status=404, field="job_id")
    return job


class JobInputSerializer(serializers.Serializer):
    text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    items = serializers.ListField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False), required=False, allow_empty=True
    )
    # A dialogue (text-to-dialogue's turns): each turn names its voice, so ``voice_id`` is not asked
    # for; its ``settings`` are the dialogue routes' (stability for every turn).
    inputs = serializers.ListField(child=DialogueInputSerializer(), required=False, allow_empty=True)
    settings = DialogueSettingsSerializer(required=False, allow_null=True)
    voice_id = StrictCharField(max_length=64, required=False)
    model_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    output_format = StrictCharField(required=False, default=DEFAULT_OUTPUT_FORMAT)
    language_code = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=16)
    voice_settings = VoiceSettingsSerializer(required=False, allow_null=True)
    apply_text_normalization = serializers.ChoiceField(choices=["auto", "on", "off"], default="auto")
    enable_logging = serializers.BooleanField(required=False, default=True)
    # As on a request: the same seed gives the same audio; dictionaries applied (none named: the
    # tenant's defaults), an unknown one a 400 naming this field.
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=4294967295)
    pronunciation_dictionary_locators = serializers.ListField(
        child=DictionaryLocatorSerializer(), required=False, allow_null=True
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "inputs" not in attrs and not attrs.get("voice_id"):
            raise serializers.ValidationError({"voice_id": ["This field is required."]}, code="required")
        return attrs


def job_request_from(request: Request, data: dict[str, Any]) -> JobRequest:
    """The ``JobRequest`` for a checked body: a text, a batch, or a dialogue (``inputs``)."""
    inputs = data.get("inputs")
    if inputs is not None:
        turns = [DialogueTurn(text=item["text"], voice_id=item["voice_id"]) for item in inputs]
        values = data.get("settings") or {}
        speed = 1.0
    else:
        turns = None
        values = data.get("voice_settings") or {}
        speed = float(values.get("speed") or 1.0)
    return JobRequest(
        tenant=request_tenant(request),
        api_key=request_api_key(request),
        voice_id=turns[0].voice_id if turns else data.get("voice_id", ""),
        output_format=output_format_for(data["output_format"]),
        text=data.get("text"),
        items=data.get("items"),
        inputs=turns,
        model_id=data.get("model_id") or None,
        speed=speed,
        language=data.get("language_code") or None,
        normalization=data["apply_text_normalization"],
        enable_logging=data["enable_logging"],
        request_id=getattr(request._request, "request_id", ""),
        settings={k: v for k, v in values.items() if v is not None},
        seed=data.get("seed"),
        pronunciation_dictionary_locators=[dict(x) for x in data.get("pronunciation_dictionary_locators") or ()],
    )


class JobListQuerySerializer(serializers.Serializer):
    page_size = serializers.IntegerField(required=False, default=50, min_value=1, max_value=100)
    status = serializers.ChoiceField(choices=Job.Status.choices, required=False)


_JOB = json_object("The job: status, progress, characters, audio seconds so far, error.")
_CONFLICT = {409: OpenApiResponse(description="The job is not in a state that allows this (e.g. not finished yet).")}


@extend_schema_view(
    get=extend_schema(
        operation_id="jobs_list",
        tags=["jobs"],
        summary="Your jobs, newest first",
        parameters=[JobListQuerySerializer],
        responses={200: json_object("jobs, has_more"), **error_responses("elevenlabs", 400, 403)},
    ),
    post=extend_schema(
        operation_id="jobs_create",
        tags=["jobs"],
        summary="Submit a long-form job (202 + its id)",
        request=JobInputSerializer,
        responses={202: _JOB, **error_responses("elevenlabs", 400, 403, 404, 413, 429)},
    ),
)
class JobsApi(APIView):
    """``POST`` submits a job (202 + its id); ``GET`` lists the tenant's jobs."""

    required_scope = Scope.JOBS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> Response:
        body = JobInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        job = job_submit(job_request_from(request, body.validated_data))
        response = Response(job_json(job), status=status.HTTP_202_ACCEPTED)
        response["Location"] = f"/v1/jobs/{job.pk}"
        return response

    def get(self, request: Request) -> Response:
        query = JobListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        qs = jobs_for_tenant(request_tenant(request))
        if query.validated_data.get("status"):
            qs = qs.filter(status=query.validated_data["status"])
        page = keyset_page(qs, after=None, size=query.validated_data["page_size"])
        return Response({"jobs": [job_json(j) for j in page.items], "has_more": page.has_more})


@extend_schema_view(
    get=extend_schema(
        operation_id="jobs_get",
        tags=["jobs"],
        summary="A job's status and progress",
        responses={200: _JOB, **error_responses("elevenlabs", 403, 404)},
    )
)
class JobDetailApi(APIView):
    required_scope = Scope.JOBS
    error_dialect = "elevenlabs"

    def get(self, request: Request, job_id: str) -> Response:
        return Response(job_json(_job_or_404(request, job_id)))


@extend_schema_view(
    post=extend_schema(
        operation_id="jobs_cancel",
        tags=["jobs"],
        summary="Cancel a job",
        request=None,
        responses={202: _JOB, **error_responses("elevenlabs", 403, 404), **_CONFLICT},
    )
)
class JobCancelApi(APIView):
    """Stops a queued job at once and a running one after its current chunk; refunds what was not synthesized."""

    required_scope = Scope.JOBS
    error_dialect = "elevenlabs"

    def post(self, request: Request, job_id: str) -> Response:
        job = _job_or_404(request, job_id)
        if job.is_finished:
            raise SynthesisError(
                f"Job '{job_id}' already {job.status}; there is nothing to cancel.",
                code="job_finished",
                status=409,
                field="job_id",
            )
        return Response(job_json(job_cancel(job)), status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    get=extend_schema(
        operation_id="jobs_audio",
        tags=["jobs"],
        summary="The job's audio (a zip for a batch)",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="Audio or zip."),
            **error_responses("elevenlabs", 403, 404),
            **_CONFLICT,
        },
    )
)
class JobAudioApi(APIView):
    required_scope = Scope.JOBS
    error_dialect = "elevenlabs"

    def get(self, request: Request, job_id: str) -> FileResponse:
        job = _job_or_404(request, job_id)
        if job.status != Job.Status.SUCCEEDED:
            raise SynthesisError(
                f"Job '{job_id}' is {job.status}; its audio is there once it has succeeded.",
                code="job_not_finished" if not job.is_finished else "job_has_no_audio",
                status=409 if not job.is_finished else 404,
                field="job_id",
            )
        if not job.audio:
            raise SynthesisError(
                f"The audio of job '{job_id}' is gone (past the plan's retention).",
                code="job_audio_purged",
                status=404,
                field="job_id",
            )
        extension = (job.audio.name or "").rsplit(".", 1)[-1]
        response = FileResponse(job.audio.open("rb"), content_type=job.content_type)
        # Named as the dashboard names it (voice, time, first words).
        response["Content-Disposition"] = content_disposition(filename_for(job, extension))
        response["x-character-count"] = str(job.characters_charged)
        return response
