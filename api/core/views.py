from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from api.core.export import ExportMixin
from api.core.fields import RejectUnknownFieldsMixin
from api.core.permissions import StaffWriteOrReadOnly
from core import gdpconfig, throttling
from core.models import CycleRun, ParameterValue
from web.core.cycle_filters import CycleRunFilterSet
from web.core.filters import StrictQueryMixin


class ParameterSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField(source="kind")
    value = serializers.JSONField()
    default = serializers.JSONField()
    unit = serializers.CharField()
    category = serializers.CharField()
    help = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)


class ParameterChangeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    value = serializers.JSONField(help_text="The new value, of the parameter's type.")
    comment = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ParameterVersionSerializer(serializers.ModelSerializer):
    changed_by = serializers.CharField(source="changed_by.username", default=None, allow_null=True)

    class Meta:
        model = ParameterValue
        fields = ["version", "value", "previous", "changed_by", "changed_at", "comment"]


def _describe(p: gdpconfig.Param, versions: dict[str, int]) -> dict:
    return {
        "name": p.name,
        "kind": p.kind,
        "value": gdpconfig.get(p.name),
        "default": p.default,
        "unit": p.unit,
        "category": p.category,
        "help": p.help,
        "version": versions.get(p.name),
    }


def _versions() -> dict[str, int]:
    return dict(ParameterValue.objects.order_by("name", "version").values_list("name", "version"))


class ParameterViewSet(StrictQueryMixin, viewsets.ViewSet):
    """Live parameters (gdpconfig), typed and versioned. Staff change them; everyone reads."""

    permission_classes = [StaffWriteOrReadOnly]
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def _param(self, name):
        try:
            return gdpconfig.param(name)
        except gdpconfig.ConfigError:
            raise Http404(f"no parameter {name}") from None

    @extend_schema(summary="List live parameters", responses=ParameterSerializer(many=True))
    def list(self, request):
        versions = _versions()
        rows = [
            _describe(p, versions)
            for p in sorted(
                [
                    *(p for p in gdpconfig.REGISTRY.values() if not p.family),
                    *gdpconfig.family_members(),
                ],
                key=lambda p: p.name,
            )
        ]
        return Response(ParameterSerializer(rows, many=True).data)

    @extend_schema(summary="Read a live parameter", responses=ParameterSerializer)
    def retrieve(self, request, name=None):
        return Response(ParameterSerializer(_describe(self._param(name), _versions())).data)

    @extend_schema(
        summary="Change a live parameter",
        description="A new value, with a comment: it takes effect in every process within "
        "seconds, and is kept in the parameter's history. Staff only.",
        request=ParameterChangeSerializer,
        responses={200: ParameterSerializer, 400: OpenApiResponse(description="invalid value")},
    )
    def partial_update(self, request, name=None):
        p = self._param(name)
        body = ParameterChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            gdpconfig.set_value(
                p.name, body.validated_data["value"], request.user, body.validated_data["comment"]
            )
        except gdpconfig.ConfigError as exc:
            raise serializers.ValidationError({"value": [str(exc)]}) from None  # names it
        return Response(ParameterSerializer(_describe(p, _versions())).data)

    @extend_schema(
        summary="A live parameter's history",
        description="Every value the parameter had: who set it, when, and why.",
        responses=ParameterVersionSerializer(many=True),
    )
    @action(detail=True, methods=["get"])
    def history(self, request, name=None):
        p = self._param(name)
        rows = ParameterValue.objects.filter(name=p.name).select_related("changed_by")
        return Response(ParameterVersionSerializer(rows, many=True).data)


class CycleRunSerializer(serializers.ModelSerializer):
    duration_s = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = CycleRun
        fields = [
            "id",
            "kind",
            "started",
            "finished",
            "duration_s",
            "status",
            "counts",
            "error",
            "host",
        ]


class CycleRunViewSet(ExportMixin, viewsets.ReadOnlyModelViewSet):
    """Runs of the background cycles: when each started and finished, what it counted, and
    why it failed if it did."""

    queryset = CycleRun.objects.all()
    serializer_class = CycleRunSerializer
    filterset_class = CycleRunFilterSet
    export_name = "cycle-runs"


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class ObtainTokenView(APIView):
    """A user's API token for a user name and password. Failed logins are counted by user name
    and by address: past the limits, 429 with Retry-After."""

    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = []  # the failed-login throttle counts here, per account and address

    @extend_schema(
        summary="Obtain an API token",
        request=TokenRequestSerializer,
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(description="a field missing or too long, named"),
            401: OpenApiResponse(description="wrong user name or password"),
            429: OpenApiResponse(description="too many failed logins: see Retry-After"),
        },
    )
    def post(self, request):
        body = TokenRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            user = throttling.authenticate(
                request._request, body.validated_data["username"], body.validated_data["password"]
            )
        except throttling.LoginsRefused as refused:
            return Response(
                {"detail": refused.message},
                status=429,
                headers={"Retry-After": str(refused.seconds)},
            )
        if user is None:
            return Response(
                {"detail": "Unable to log in with the user name and password given."},
                status=401,
                headers={"WWW-Authenticate": "Token"},
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
