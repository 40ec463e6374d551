"""PanDA's pilot protocol: the endpoints panda-server's job dispatcher (/server/panda/) and its
cache (/cache/) offer PanDA's own pilot, which follow PanDA's protocol, not gridwms's API: form
posts, JSON answers carrying panda-server's StatusCode. Token clients only (the pilot sends
`Authorization: Bearer <token>`): no login redirect, no CSRF; outside the OpenAPI schema. Thin:
the work is in dispatch.py and protocol.py."""

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from api.core.authentication import BearerAuthentication, CachedTokenAuthentication
from api.core.codec import JsonOnlyNegotiation, OrjsonParser, OrjsonRenderer
from api.panda_pilot import dispatch
from api.panda_pilot import protocol as p


class PandaView(APIView):
    """PanDA's answers: JSON, its StatusCode in every body, errors included."""

    authentication_classes = [CachedTokenAuthentication, BearerAuthentication]
    parser_classes = [FormParser, MultiPartParser, OrjsonParser]
    renderer_classes = [OrjsonRenderer]
    content_negotiation_class = JsonOnlyNegotiation

    def answer(self, work, *args) -> Response:
        try:
            return Response(work(*args))
        except p.FormError as exc:
            return Response(exc.body(), status=status.HTTP_400_BAD_REQUEST)
        except ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {"detail": exc.detail}
            return Response(
                {"StatusCode": p.SC_FAILED, **detail}, status=status.HTTP_400_BAD_REQUEST
            )
        except dispatch.Conflict as exc:
            return Response(
                {"StatusCode": p.SC_FAILED, "errorDialog": str(exc)},
                status=status.HTTP_409_CONFLICT,
            )
        except Http404:
            return Response(
                {"StatusCode": p.SC_FAILED, "errorDialog": "no such job"},
                status=status.HTTP_404_NOT_FOUND,
            )
        except APIException as exc:  # the ownership rule's 403
            return Response(
                {"StatusCode": p.SC_PERMS, "errorDialog": str(exc.detail)},
                status=exc.status_code,
            )


class GetJobView(PandaView):
    @extend_schema(exclude=True)
    def post(self, request):
        return self.answer(dispatch.get_job, request.user, request.data)


class UpdateJobView(PandaView):
    @extend_schema(exclude=True)
    def post(self, request):
        return self.answer(dispatch.update_job, request.user, request.data)


class GetStatusView(PandaView):
    @extend_schema(exclude=True)
    def post(self, request):
        return self.answer(dispatch.get_status, request.user, request.data)


class QueueDataView(PandaView):
    """schedconfig/<queue>.all.json: the queue's description."""

    @extend_schema(exclude=True)
    def get(self, request, queue):
        return self.answer(lambda: p.queuedata(dispatch.queue_named(queue)))


class QueuesView(PandaView):
    """schedconfig/<queue>.json: CRIC's queues file, of that one queue."""

    @extend_schema(exclude=True)
    def get(self, request, queue):
        return self.answer(lambda: {queue: p.queuedata(dispatch.queue_named(queue))})


class StoragesView(PandaView):
    """ddmendpoints.json: CRIC's storages file."""

    @extend_schema(exclude=True)
    def get(self, request):
        return self.answer(dispatch.storages)
