from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from api.classads import serializers as s
from api.core.export import ExportMixin
from api.shares.mixins import VisibleToUserMixin
from classads import ads, match_analysis, services
from classads.models import JobAd, SiteAd
from shares.ownership import may_act_on
from web.classads.filters import JobAdFilterSet, SiteAdFilterSet


class MayAdvertise(BasePermission):
    """Authenticated users read; staff, and accounts given the `classads.advertise_sitead`
    permission (a site's or the matchmaker monitor's service account), advertise and
    invalidate site ads."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return True
        return user.is_staff or user.has_perm("classads.advertise_sitead")


class SiteAdViewSet(
    ExportMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Site ads: `condor_advertise UPDATE_STARTD_AD` (POST), the collector's view (GET), and
    INVALIDATE_STARTD_ADS (DELETE)."""

    queryset = SiteAd.objects.all()
    serializer_class = s.SiteAdSerializer
    permission_classes = [MayAdvertise]
    filterset_class = SiteAdFilterSet
    export_name = "site-ads"
    lookup_value_regex = r"\d+"

    @extend_schema(
        summary="Advertise a site ad",
        request=s.AdvertiseSerializer,
        responses={
            201: s.AdvertisedSerializer,
            200: OpenApiResponse(
                s.AdvertisedSerializer,
                description="an update of a stored ad, or `ignored: true` when its "
                "UpdateSequenceNumber is not higher than the stored one (nothing changed)",
            ),
            400: OpenApiResponse(description="unparsable ad: the parser's message; not stored"),
        },
    )
    def create(self, request, *args, **kwargs):
        body = s.AdvertiseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            out = services.advertise(
                body.validated_data["ad"], body.validated_data["syntax"], user=request.user
            )
        except ads.AdError as exc:
            raise ValidationError({"ad": [str(exc)]}) from None
        data = s.AdvertisedSerializer(
            {
                "site_ad": out.site_ad,
                "created": out.created,
                "ignored": out.ignored,
                "reason": out.reason,
            }
        ).data
        return Response(data, status=status.HTTP_201_CREATED if out.created else status.HTTP_200_OK)


class JobAdViewSet(
    VisibleToUserMixin, ExportMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Job and DAG ads for Condor-G matchmaking: submit, list, read, analyse, release, remove."""

    queryset = JobAd.objects.select_related("owner", "owner_group")
    filterset_class = JobAdFilterSet
    export_name = "job-ads"
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        qs = super().get_queryset()
        if self.action == "retrieve":
            qs = qs.prefetch_related("node_jobs")
        return qs

    def get_serializer_class(self):
        if self.action == "create":
            return s.JobAdSubmitSerializer
        if self.action == "retrieve":
            return s.JobAdDetailSerializer
        return s.JobAdSerializer

    @extend_schema(
        summary="Submit a job ad",
        request=s.JobAdSubmitSerializer,
        responses={201: s.JobAdDetailSerializer, 400: OpenApiResponse(description="bad ad")},
    )
    def create(self, request, *args, **kwargs):
        body = s.JobAdSubmitSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        [job_ad] = services.submit_job_ads(request.user, [body.validated_data])
        job_ad = self.get_queryset().prefetch_related("node_jobs").get(pk=job_ad.pk)
        return Response(s.JobAdDetailSerializer(job_ad).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Match a job ad against every site ad",
        responses=s.SiteAnalysisSerializer(many=True),
    )
    @action(detail=True, methods=["get"], pagination_class=None)
    def analysis(self, request, pk=None):
        """Against every site ad: does it match, which clause of the job's or the site's
        Requirements fails, and the Rank the job would give it."""
        job_ad = get_object_or_404(self.get_queryset(), pk=pk)
        rows = match_analysis.analyse(
            ads.parse_new(job_ad.text),
            [(sa.name, services.live_ad(sa)) for sa in SiteAd.objects.order_by("id")[:500]],
        )
        return Response(s.SiteAnalysisSerializer(rows, many=True).data)

    def _act(self, request, pk, fn):
        job_ad = get_object_or_404(self.get_queryset(), pk=pk)
        if not may_act_on(request.user, job_ad):
            raise PermissionDenied("Only the owner, the owner's JobSharing group or staff may.")
        try:
            fn(job_ad.pk, request.user)
        except services.JobAdActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(s.JobAdDetailSerializer(self.get_queryset().get(pk=job_ad.pk)).data)

    @extend_schema(
        summary="Release a held job ad",
        request=None,
        responses={200: s.JobAdDetailSerializer, 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None):
        """condor_release: a held ad waits for the negotiator again."""
        return self._act(request, pk, services.release)

    @extend_schema(
        summary="Remove a job ad",
        request=None,
        responses={200: s.JobAdDetailSerializer, 409: OpenApiResponse()},
    )
    @action(detail=True, methods=["post"])
    def remove(self, request, pk=None):
        """condor_rm: removes the ad; a matched ad's node jobs are killed."""
        return self._act(request, pk, services.remove)
