"""DiracX's endpoints, so that DiracX's own command line (`dirac`) and client library work
against gridwms unmodified: discovery, who am I, submit JDLs, search and summarise jobs, set
their statuses. Thin: each view reads the request and calls the logic beside it.

These follow DiracX's OpenAPI description (diracx-routers), not gridwms's: their paths, bodies,
answers and errors (`{"detail": ...}`) are DiracX's, so they are left out of gridwms's own
schema (/api/schema/), which describes /api/v1/ alone.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from api.core.codec import JsonOnlyNegotiation, OrjsonParser, OrjsonRenderer
from api.diracx import identity, search, submission
from api.diracx import status as statuses
from api.diracx.errors import DiracxError


class DiracxView(APIView):
    """JSON in and out, whatever the Accept header; the API's token, bearer and session
    authentication (a session's unsafe request checks CSRF, a token's needs none)."""

    parser_classes = [OrjsonParser]
    renderer_classes = [OrjsonRenderer]
    content_negotiation_class = JsonOnlyNegotiation


class OpenIDConfigurationView(DiracxView):
    """GET /.well-known/openid-configuration: asked, unauthenticated, before every command."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @extend_schema(exclude=True)
    def get(self, request):
        return Response(identity.openid_configuration(request.build_absolute_uri("/")))


class UserInfoView(DiracxView):
    """GET /api/auth/userinfo (`dirac whoami`)."""

    @extend_schema(exclude=True)
    def get(self, request):
        return Response(identity.userinfo(request.user))


class SubmitJDLView(DiracxView):
    """POST /api/jobs/jdl (`dirac jobs submit`): a list of JDL texts, 201 with the new jobs."""

    @extend_schema(exclude=True)
    def post(self, request):
        try:
            jobs = submission.submit(request.user, request.data)
        except DiracxError as exc:
            return exc.response()
        return Response(submission.inserted(jobs), status=status.HTTP_201_CREATED)


class SearchView(DiracxView):
    """POST /api/jobs/search?page=&per_page= (`dirac jobs search`): 200 with every match, 206
    with a page of them and `Content-Range: jobs first-last/total`, 416 past the last page."""

    @extend_schema(exclude=True)
    def post(self, request):
        params = request.query_params
        try:
            page = search.search(
                request.user, request.data, params.get("page"), params.get("per_page")
            )
        except DiracxError as exc:
            return exc.response()
        rows, total = page.rows, page.total
        if not rows and total:
            answer = Response(rows, status=status.HTTP_416_REQUESTED_RANGE_NOT_SATISFIABLE)
            answer["Content-Range"] = f"jobs */{total}"
        elif len(rows) < total:
            answer = Response(rows, status=status.HTTP_206_PARTIAL_CONTENT)
            answer["Content-Range"] = f"jobs {page.first}-{page.first + len(rows) - 1}/{total}"
        else:
            answer = Response(rows)
        return answer


class SummaryView(DiracxView):
    """POST /api/jobs/summary: the number of jobs per value of the grouping parameters."""

    @extend_schema(exclude=True)
    def post(self, request):
        try:
            return Response(search.summary(request.user, request.data))
        except DiracxError as exc:
            return exc.response()


class JobStatusView(DiracxView):
    """PATCH /api/jobs/status?force=: status updates of many jobs, each done or refused."""

    @extend_schema(exclude=True)
    def patch(self, request):
        try:
            updates = statuses.read(request.data, request.query_params.get("force"))
        except DiracxError as exc:
            return exc.response()
        return Response(statuses.apply(request.user, updates))
