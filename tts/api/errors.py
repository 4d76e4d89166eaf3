"""Errors in the caller's dialect.

ElevenLabs routes answer ``{"detail": {"status": code, "message": ...}}``;
OpenAI routes ``{"error": {"message", "type", "param", "code"}}``. Views pick
theirs with ``error_dialect``. Every error names the field at fault when
there is one, and 429/503 carry ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from tts.errors import SynthesisError
from tts.text.errors import TextError

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class ApiError(Exception):
    """What every error becomes before it is rendered in a dialect."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status_code: int,
        field: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status_code = status_code
        self.field = field
        self.retry_after = retry_after


def _flatten_validation(detail: Any, prefix: str = "") -> list[tuple[str, str]]:
    """DRF's nested ValidationError detail as (dotted field path, message) pairs."""
    if isinstance(detail, dict):
        pairs = []
        for key, value in detail.items():
            path = f"{prefix}.{key}" if prefix and key != "non_field_errors" else key
            pairs.extend(_flatten_validation(value, path))
        return pairs
    if isinstance(detail, list):
        return [pair for item in detail for pair in _flatten_validation(item, prefix)]
    return [(prefix, str(detail))]


def to_api_error(exc: Exception) -> ApiError | None:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, SynthesisError):
        return ApiError(
            exc.message, code=exc.code, status_code=exc.status, field=exc.field, retry_after=exc.retry_after
        )
    if isinstance(exc, TextError):  # the shared character check of a body (tts.api.parsers)
        return ApiError(str(exc), code=exc.code, status_code=exc.status, field=exc.field)
    if isinstance(exc, exceptions.ValidationError):
        pairs = _flatten_validation(exc.detail)
        field = next((f for f, _ in pairs if f and f != "non_field_errors"), None)
        message = "; ".join(f"{f}: {m}" if f and f != "non_field_errors" else m for f, m in pairs)
        return ApiError(message or "Invalid request.", code="invalid_request", status_code=400, field=field)
    if isinstance(exc, exceptions.ParseError):
        return ApiError(f"The request body is not valid JSON: {exc.detail}", code="invalid_json", status_code=400)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return ApiError(str(exc.detail), code="unsupported_media_type", status_code=415)
    if isinstance(exc, exceptions.NotAuthenticated):
        return ApiError(str(exc.detail), code="missing_api_key", status_code=401)
    if isinstance(exc, exceptions.AuthenticationFailed):
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "invalid_api_key"
        return ApiError(str(exc.detail), code=str(code), status_code=401)
    if isinstance(exc, exceptions.PermissionDenied):
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "permission_denied"
        return ApiError(str(exc.detail), code=str(code), status_code=403)
    if isinstance(exc, exceptions.NotFound):
        return ApiError(str(exc.detail), code="not_found", status_code=404)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return ApiError(str(exc.detail), code="method_not_allowed", status_code=405)
    if isinstance(exc, exceptions.Throttled):
        wait = getattr(exc, "wait", None)
        return ApiError(str(exc.detail), code="rate_limited", status_code=429, retry_after=int(wait) if wait else None)
    if isinstance(exc, exceptions.APIException):
        return ApiError(str(exc.detail), code=str(exc.default_code), status_code=exc.status_code)
    return None


def render_error(err: ApiError, dialect: str) -> Response:
    if dialect == "fastapi":
        return _render_fastapi(err)
    if dialect == "openai":
        body: dict[str, Any] = {
            "error": {
                "message": err.message,
                "type": _OPENAI_TYPES.get(err.status_code, "api_error"),
                "param": err.field,
                "code": err.code,
            }
        }
    else:
        detail: dict[str, Any] = {"status": err.code, "message": err.message}
        if err.field:
            detail["param"] = err.field
        body = {"detail": detail}
    response = Response(body, status=err.status_code)
    if err.retry_after is not None:
        response["Retry-After"] = str(err.retry_after)
    if err.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


def _render_fastapi(err: ApiError) -> Response:
    """The CosyVoice deployments' errors (FastAPI): ``{"detail": message}``; a malformed body
    is FastAPI's 422 with a list; over-long text is their 400."""
    status_code = err.status_code
    detail: Any = err.message
    if err.code == "invalid_request" and status_code == 400:
        status_code = 422
        detail = [{"loc": ["body", err.field or ""], "msg": err.message, "type": "value_error"}]
    elif status_code == 413:
        status_code = 400
    response = Response({"detail": detail}, status=status_code)
    if err.retry_after is not None:
        response["Retry-After"] = str(err.retry_after)
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    err = to_api_error(exc)
    if err is None:
        return drf_exception_handler(exc, context)
    dialect = getattr(context.get("view"), "error_dialect", "elevenlabs")
    return render_error(err, dialect)
