from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from api.notifications import serializers as s
from notifications import services
from notifications.models import NotificationRequest


class NotificationRequestViewSet(
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Your requests to be told when a job or a task ends (finished or failed): by e-mail,
    by a webhook POST, or both. Each user sees and changes only their own."""

    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    serializer_class = s.RequestSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return NotificationRequest.objects.none()
        return NotificationRequest.objects.filter(user=self.request.user)

    def perform_create(self, serializer):
        serializer.instance = services.create_request(
            self.request.user, dict(serializer.validated_data)
        )

    @extend_schema(
        methods=["GET"],
        summary="Read your notification defaults",
        description="Your default, applied to each of your jobs outside a task and to each of "
        "your tasks: e-mail on or off, a webhook URL, and which outcomes.",
        responses=s.PreferenceSerializer,
    )
    @extend_schema(
        methods=["PATCH"],
        summary="Change your notification defaults",
        request=s.PreferenceSerializer,
        responses={200: s.PreferenceSerializer, 400: OpenApiResponse(description="bad input")},
    )
    @action(
        detail=False,
        methods=["get", "patch"],
        serializer_class=s.PreferenceSerializer,
        pagination_class=None,
        filter_backends=[],
    )
    def preferences(self, request):
        """Your default, applied to each of your jobs outside a task and to each of your
        tasks: e-mail on or off, a webhook URL, and which outcomes."""
        pref = services.preference_of(request.user)
        if request.method == "GET":
            return Response(s.PreferenceSerializer(pref).data)
        body = s.PreferenceSerializer(pref, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        pref = services.save_preference(request.user, dict(body.validated_data))
        return Response(s.PreferenceSerializer(pref).data, status=status.HTTP_200_OK)

    @extend_schema(summary="List the notices sent to you", responses=s.NoticeSerializer(many=True))
    @action(detail=False, methods=["get"], serializer_class=s.NoticeSerializer, filter_backends=[])
    def sent(self, request):
        """The notices queued or sent to you, newest first, with their state."""
        page = self.paginate_queryset(services.notices_of(request.user))
        return self.get_paginated_response(s.NoticeSerializer(page, many=True).data)
