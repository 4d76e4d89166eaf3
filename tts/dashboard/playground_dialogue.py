"""The playground's dialogue mode: its turns spoken as ``POST /v1/text-to-dialogue/stream`` speaks
them, for the dashboard's session instead of an API key (docs/dialogue.md).

The single-voice mode opens the stream-input WebSocket, which takes the dashboard's session when no
key is sent (source ``playground``). An HTTP API route takes only keys, so the dialogue mode posts the
route's own body to this same-origin twin (``/playground/dialogue/stream``): the route's serializer
and request (``tts.api.dialogue.dialogue_request_from``), the same pipeline and streamed answer, its
errors in the route's dialect. Who may call it is the dashboard's rule: a logged-in member of the
session's tenant, with the page's CSRF token.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Tenant
from accounts.tenancy import current_membership
from tts.api.dialogue import dialogue_request_from
from tts.api.streaming import audio_stream_response
from tts.models import SynthesisRecord
from tts.synthesis import synthesis_prepare


def playground_tenant(request: Request) -> Tenant:
    """The tenant a playground call acts for: the session's current one, the user (logged in, CSRF
    token checked by ``SessionAuthentication``) still a member of it."""
    membership = current_membership(request._request)
    if membership is None:
        raise exceptions.PermissionDenied("You are not a member of a tenant.")
    return membership.tenant


class PlaygroundDialogueStreamApi(APIView):
    """The playground's dialogue, chunked audio as it is synthesized (``/v1/text-to-dialogue/stream``'s answer)."""

    # The session, and its CSRF token (a cookie alone must not speak, and bill, for a tenant).
    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAuthenticated]
    error_dialect = "elevenlabs"
    # The dashboard's, not the API's: /v1/text-to-dialogue/stream is the documented route.
    schema = None

    def post(self, request: Request) -> StreamingHttpResponse:
        tenant = playground_tenant(request)
        req, ignored = dialogue_request_from(request, source=SynthesisRecord.Source.PLAYGROUND, tenant=tenant)
        return audio_stream_response(request, synthesis_prepare(req), ignored=ignored)
