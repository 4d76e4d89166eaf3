"""Errors in the caller's dialect.

ElevenLabs routes answer ``{"detail": {"status": code, "message": ...}}``;
OpenAI routes ``{"error": {"message", "type", "param", "code"}}``. Views pick
theirs with ``error_dialect``. Every error names the field at fault when
there is one, and 429/503 carry ``Retry-After``. What is rendered is always
the one ``SynthesisError`` (``tts.errors``): views and services raise it, and
``to_api_error`` translates the foreign exceptions (DRF's, ``TextError``) into it.
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


def to_api_error(exc: Exception) -> SynthesisError | None:
    """``exc`` as the ``SynthesisError`` to render; None for what DRF should answer itself."""
    if isinstance(exc, SynthesisError):
        return exc
    if isinstance(exc, TextError):  # the shared character check of a body (tts.api.parsers)
        return SynthesisError.from_text(exc)
    if isinstance(exc, exceptions.ValidationError):
        pairs = _flatten_validation(exc.detail)
        field = next((f for f, _ in pairs if f and f != "non_field_errors"), None)
        message = "; ".join(f"{f}: {m}" if f and f != "non_field_errors" else m for f, m in pairs)
        return SynthesisError(message or "Invalid request.", code="invalid_request", status=400, field=field)
    if isinstance(exc, exceptions.ParseError):
        return SynthesisError(f"The request body is not valid JSON: {exc.detail}", code="invalid_json", status=400)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return SynthesisError(str(exc.detail), code="unsupported_media_type", status=415)
    if isinstance(exc, exceptions.NotAuthenticated):
        return SynthesisError(str(exc.detail), code="missing_api_key", status=401)
    if isinstance(exc, exceptions.AuthenticationFailed):
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "invalid_api_key"
        return SynthesisError(str(exc.detail), code=str(code), status=401)
    if isinstance(exc, exceptions.PermissionDenied):
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "permission_denied"
        return SynthesisError(str(exc.detail), code=str(code), status=403)
    if isinstance(exc, exceptions.NotFound):
        return SynthesisError(str(exc.detail), code="not_found", status=404)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return SynthesisError(str(exc.detail), code="method_not_allowed", status=405)
    if isinstance(exc, exceptions.Throttled):
        wait = getattr(exc, "wait", None)
        return SynthesisError(str(exc.detail), code="rate_limited", status=429, retry_after=int(wait) if wait else None)
    if isinstance(exc, exceptions.APIException):
        return SynthesisError(str(exc.detail), code=str(exc.default_code), status=exc.status_code)
    return None


def render_error(err: SynthesisError, dialect: str) -> Response:
    if dialect == "fastapi":
        return _render_fastapi(err)
    if dialect == "openai":
        body: dict[str, Any] = {
            "error": {
                "message": err.message,
                "type": _OPENAI_TYPES.get(err.status, "api_error"),
                "param": err.field,
                "code": err.code,
            }
        }
    else:
        detail: dict[str, Any] = {"status": err.code, "message": err.message}
        if err.field:
            detail["param"] = err.field
        body = {"detail": detail}
    response = Response(body, status=err.status)
    if err.retry_after is not None:
        response["Retry-After"] = str(err.retry_after)
    if err.status == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


def _render_fastapi(err: SynthesisError) -> Response:
    """The CosyVoice deployments' errors (FastAPI): ``{"detail": message}``; a malformed body
    is FastAPI's 422 with a list; over-long text is their 400."""
    status_code = err.status
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
