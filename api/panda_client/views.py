"""PanDA's job API for pandaclient.Client (submitJobs, getJobStatus, killJobs, hello): thin
views over api.panda_client.submission, each answer in PanDA's envelope
{"success", "message", "data"}, an error too (with its HTTP status: 400 naming the field, 401,
403...). A client authenticates with `Authorization: Bearer` (a token of `manage.py
panda_token`, or an API token's key): no session, so no CSRF and no login page."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.core.authentication import BearerAuthentication, CachedTokenAuthentication
from api.core.codec import OrjsonParser, OrjsonRenderer
from api.panda_client import submission
from api.panda_client.jobspec import PandaInputError, decode_jobs

MAX_IDS = 5500  # PanDA's own bound on the PanDA IDs of one request


def envelope(success: bool, message: str = "", data=None, code: int = 200) -> Response:
    return Response({"success": success, "message": message, "data": data}, status=code)


def _message(detail) -> str:
    """A DRF error's detail as one line of text."""
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_message(v)}" for k, v in detail.items())
    if isinstance(detail, list):
        return " ".join(_message(v) for v in detail)
    return str(detail)


@extend_schema(exclude=True)
class PandaView(APIView):
    """These endpoints follow PanDA's API (pandaserver/api/v1), not gridwms's: they are left
    out of gridwms's OpenAPI schema."""

    # Bearer first: a refused token answers 401 with `WWW-Authenticate: Bearer`.
    authentication_classes = [BearerAuthentication, CachedTokenAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [OrjsonParser, FormParser]
    renderer_classes = [OrjsonRenderer]

    def handle_exception(self, exc):
        if isinstance(exc, PandaInputError):
            data = {"field": exc.field, "job": exc.job}
            return envelope(False, str(exc), data, status.HTTP_400_BAD_REQUEST)
        response = super().handle_exception(exc)  # DRF's and gridwms's handler: the status
        detail = response.data
        if isinstance(detail, dict) and "detail" in detail:
            detail = detail["detail"]
        response.data = {"success": False, "message": _message(detail), "data": None}
        return response

    def body(self, request) -> dict:
        data = request.data
        if not isinstance(data, dict):
            raise PandaInputError("body", "must be a JSON object")
        return data


class SubmitView(PandaView):
    """job/submit: the JobSpecs of Client.submitJobs, stored all or nothing."""

    def post(self, request):
        body = self.body(request)
        if "jobs" not in body:
            raise PandaInputError("jobs", "required: the JobSpecs to submit")
        jobs = decode_jobs(body["jobs"], submission.submission_limit())
        claims = submission.token_claims(request)
        return envelope(True, data=submission.submit(request.user, jobs, claims))


class DescriptionView(PandaView):
    """job/get_description: the JobSpec of each PanDA ID (Client.getJobStatus); None for one
    unknown or not the caller's."""

    def get(self, request):
        return self._describe(request, request.query_params.getlist("job_ids"))

    def post(self, request):
        return self._describe(request, self.body(request).get("job_ids"))

    def _describe(self, request, raw):
        ids = submission.job_ids(raw, MAX_IDS)
        return envelope(True, data=submission.describe_jobs(request.user, ids))


class KillView(PandaView):
    """job/kill: one boolean per PanDA ID (Client.killJobs), True for each job killed."""

    def post(self, request):
        body = self.body(request)
        ids = submission.job_ids(body.get("job_ids"), MAX_IDS)
        code = body.get("code")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise PandaInputError("code", "must be an integer (PanDA's kill code) or null")
        return envelope(True, data=submission.kill_jobs(request.user, ids))


class IsAliveView(PandaView):
    """system/is_alive (Client.hello): open to all, as PanDA's is."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request):
        return envelope(True, "alive=yes")
