from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.core.fields import RejectUnknownFieldsMixin, StrictCharField, StrictIntegerField
from api.matcher.serializers import MAX_CPU_TIME
from classads import ads
from classads.models import JobAd, SiteAd
from core import gdpconfig
from shares.models import GridGroup

MAX_AD_CHARS = 100_000
NODE_JOB_NAME_MAX = 128  # matcher.models.Job.name
SYNTAXES = ["auto", "old", "new"]


def attributes_of(ad) -> dict[str, str]:
    """Attribute -> its expression text, for display and the API."""
    return {name: str(ad.lookup(name)) for name in ad.keys()}


class AdvertiseSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    ad = StrictCharField(
        max_length=MAX_AD_CHARS,
        trim_whitespace=False,
        help_text="The site ad: old syntax (`Attr = value` lines, as condor_advertise reads) "
        "or new syntax (`[ Attr = value; ... ]`). It needs a unique Name and Requirements.",
    )
    syntax = serializers.ChoiceField(
        choices=SYNTAXES,
        default="auto",
        help_text="auto: new syntax when the text starts with `[`.",
    )


class SiteAdSerializer(serializers.ModelSerializer):
    attributes = serializers.SerializerMethodField()

    class Meta:
        model = SiteAd
        fields = [
            "id",
            "name",
            "site",
            "sequence",
            "cur_matches",
            "max_matches",
            "want_ad_revaluate",
            "advertised",
            "created",
            "text",
            "attributes",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_attributes(self, site_ad):
        from classads.services import live_ad

        return attributes_of(live_ad(site_ad))


class AdvertisedSerializer(serializers.Serializer):
    site_ad = SiteAdSerializer()
    created = serializers.BooleanField()
    ignored = serializers.BooleanField(
        help_text="true: the stored ad has an UpdateSequenceNumber at least as high; nothing "
        "changed"
    )
    reason = serializers.CharField()


class NodeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = StrictCharField(max_length=64, required=False, allow_blank=True, default="")
    cpu_time = StrictIntegerField(
        min_value=1, max_value=MAX_CPU_TIME, required=False, help_text="CPU seconds."
    )
    submit = StrictCharField(
        max_length=20_000,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="The node's submit lines; `$ENV(X)` is taken from the matched site's "
        "environment.",
    )


class JobAdSubmitSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """A job ad, or a DAG ad when `nodes` are given: all nodes then run at the matched site."""

    ad = StrictCharField(
        max_length=MAX_AD_CHARS,
        trim_whitespace=False,
        help_text="condor_submit lines (`+Attr = expr`, Requirements, Rank, "
        "`GlobusScheduler = $$(MatchmakerURL)`...) or a new-syntax ClassAd. Rank defaults to "
        "0.0, Requirements to true.",
    )
    name = StrictCharField(max_length=100, required=False, allow_blank=True, default="")
    owner_group = StrictCharField(
        max_length=64,
        required=False,
        help_text="A group the user belongs to; may be left out when it belongs to only one.",
    )
    setup = StrictCharField(
        max_length=64,
        required=False,
        help_text="Default: the grid's Setup, the gdpconfig parameter DefaultSetup.",
    )
    cpu_time = StrictIntegerField(
        min_value=1,
        max_value=MAX_CPU_TIME,
        required=False,
        help_text="CPU seconds of a plain job (of each node without its own).",
    )
    user_priority = StrictIntegerField(min_value=0, max_value=10, required=False, default=1)
    nodes = NodeSerializer(many=True, required=False, allow_empty=False, max_length=1000)

    def validate_ad(self, value):
        try:
            return ads.parse_job_ad(value)
        except ads.AdError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_owner_group(self, value):
        user = self.context["request"].user
        group = user.grid_groups.filter(name=value).first()
        if group is None:
            if GridGroup.objects.filter(name=value).exists():
                raise serializers.ValidationError(
                    f"{user.get_username()} is not a member of group {value}."
                )
            raise serializers.ValidationError(f"Unknown group {value}.")
        return group

    def validate(self, attrs):
        user = self.context["request"].user
        if "owner_group" not in attrs:
            groups = list(user.grid_groups.all()[:2])
            if len(groups) != 1:
                raise serializers.ValidationError(
                    {"owner_group": ["Required: you do not belong to exactly one group."]}
                )
            attrs["owner_group"] = groups[0]
        attrs.setdefault("setup", gdpconfig.get("DefaultSetup"))
        default_cpu = attrs.get("cpu_time") or gdpconfig.get("DefaultNodeCPUTime")
        nodes = attrs.get("nodes")
        attrs["is_dag"] = bool(nodes)
        # Each node's job is named "<name>/<node name>", a job name of at most 128 characters.
        name = attrs.get("name", "")
        too_long = [
            {"name": [f"with the ad's name, over a job name's {NODE_JOB_NAME_MAX} characters"]}
            if len(name) + 1 + len(n.get("name", "")) > NODE_JOB_NAME_MAX
            else {}
            for n in nodes or []
        ]
        if any(too_long):
            raise serializers.ValidationError({"nodes": too_long})
        if nodes:
            attrs["nodes"] = [
                {
                    "name": n.get("name") or f"node{i}",
                    "cpu_time": n.get("cpu_time") or default_cpu,
                    "submit": n.get("submit", ""),
                }
                for i, n in enumerate(nodes, start=1)
            ]
        else:
            attrs["nodes"] = [{"name": "job", "cpu_time": default_cpu, "submit": ""}]
        return attrs


class JobAdSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    owner_group = serializers.CharField(source="owner_group.name", read_only=True)

    class Meta:
        model = JobAd
        fields = [
            "id",
            "name",
            "is_dag",
            "owner",
            "owner_group",
            "setup",
            "user_priority",
            "status",
            "hold_reason",
            "site_ad",
            "site_ad_name",
            "site",
            "rank",
            "matched",
            "created",
        ]
        read_only_fields = fields


class JobAdDetailSerializer(JobAdSerializer):
    node_jobs = serializers.SerializerMethodField()

    class Meta(JobAdSerializer.Meta):
        fields = [*JobAdSerializer.Meta.fields, "text", "nodes", "match_attrs", "node_jobs"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_node_jobs(self, job_ad):
        return [n.job_id for n in job_ad.node_jobs.all()]


class ClauseSerializer(serializers.Serializer):
    clause = serializers.CharField()
    value = serializers.CharField()
    passes = serializers.BooleanField()


class SiteAnalysisSerializer(serializers.Serializer):
    site_ad = serializers.CharField()
    matches = serializers.BooleanField()
    best = serializers.BooleanField()
    rank = serializers.FloatField()
    job_clauses = ClauseSerializer(many=True)
    site_clauses = ClauseSerializer(many=True)
    job_failing = serializers.ListField(child=serializers.CharField())
    site_failing = serializers.ListField(child=serializers.CharField())
