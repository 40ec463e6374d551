"""The resource description a pilot presents, validated into a matching.Resource."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.core.fields import (
    RejectUnknownFieldsMixin,
    StrictCharField,
    StrictIntegerField,
    StrictStringListField,
    UnboundFieldsMixin,
)
from core import gdpconfig
from matcher import matching, topology
from sandboxes import services as sandboxes
from shares.models import GridGroup, User


@extend_schema_field(
    {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
)
class StringOrListField(serializers.Field):
    """A string or a list of strings (a resource may offer several platforms)."""

    default_error_messages = {
        "invalid": "Must be a string or a list of strings.",
        "null": "Null characters are not allowed.",
    }

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(v, str) and v.strip() for v in data):
            self.fail("invalid")
        if any("\x00" in v for v in data):
            self.fail("null")  # as every other string of the description (DRF's CharField)
        return [v.strip() for v in data]

    def to_representation(self, value):
        return value


class ResourceDescriptionSerializer(
    UnboundFieldsMixin, RejectUnknownFieldsMixin, serializers.Serializer
):
    site = StrictCharField(max_length=128, help_text='The pilot\'s site, or "any".')
    grid_ce = StrictCharField(max_length=128, required=False, help_text="The pilot's CE.")
    setup = StrictCharField(
        max_length=64,
        required=False,
        help_text="Default: the grid's Setup, the gdpconfig parameter DefaultSetup.",
    )
    cpu_time = StrictIntegerField(min_value=0, help_text="CPU seconds the pilot can offer.")
    platform = StringOrListField(required=False, help_text="A platform or a list of them.")
    tag = StrictStringListField(help_text="Tags the resource offers.")
    pilot_type = StrictCharField(max_length=32, required=False)
    owner_dn = StrictCharField(max_length=255, required=False, help_text="Private pilots.")
    owner_group = StrictCharField(max_length=64, required=False, help_text="Private pilots.")
    pilot_reference = StrictCharField(
        max_length=255,
        required=False,
        allow_blank=True,
        help_text="The pilot's own reference (its credential's pilot, created if new; none: a "
        "new pilot with a fresh reference, told back in the answer).",
    )

    def validate_site(self, value):
        if not matching.is_any(value) and not topology.site_exists(value):
            raise serializers.ValidationError(f"Unknown site {value}.")
        return value

    def validate(self, attrs):
        ce = attrs.get("grid_ce")
        if ce and not matching.is_any(ce):
            site = topology.site_of_ce(ce)
            if site is None:
                raise serializers.ValidationError({"grid_ce": [f"Unknown CE {ce}."]})
            if matching.is_any(attrs["site"]):
                attrs["site"] = site  # the CE says where the pilot is
            elif site != attrs["site"]:
                raise serializers.ValidationError(
                    {"grid_ce": [f"CE {ce} belongs to {site}, not {attrs['site']}."]}
                )
        if self.context.get("claim") and matching.is_any(attrs["site"]):
            # A pilot that takes a job runs somewhere: "any" would skip the banned-sites rule.
            raise serializers.ValidationError(
                {"site": ['A pilot asking for a job names its site (or its CE), not "any".']}
            )
        attrs.setdefault("setup", gdpconfig.get("DefaultSetup"))
        return attrs

    def resource(self, user) -> matching.Resource:
        """The validated description as the matcher sees it (`resource_of`)."""
        return resource_of(self.validated_data, user)


def resource_of(a: dict, user) -> matching.Resource:
    """A validated description as the matcher sees it, with the credential's rules: a
    generic-pilot credential (or staff) takes any non-private TaskQueue, optionally narrowed
    to an owner group / DN; any other credential is a private pilot of its own user."""
    groups = {name: pk for pk, name, _ in topology.groups_of(user)}
    generic = user.is_staff or any(g for _, _, g in topology.groups_of(user))
    owner_id = group_id = None
    private = False
    if generic:
        if "owner_group" in a:
            group = GridGroup.objects.filter(name=a["owner_group"]).first()
            if group is None:
                raise serializers.ValidationError({"owner_group": ["Unknown group."]})
            group_id, private = group.pk, True
        if "owner_dn" in a:
            owner = User.objects.filter(dn=a["owner_dn"]).first()
            if owner is None:
                raise serializers.ValidationError({"owner_dn": ["Unknown DN."]})
            owner_id, private = owner.pk, True
            if group_id is None:
                raise serializers.ValidationError({"owner_group": ["Required with owner_dn."]})
    else:
        name = a.get("owner_group") or (next(iter(groups)) if len(groups) == 1 else None)
        if name is None:
            raise serializers.ValidationError(
                {"owner_group": ["Required: your credential belongs to several groups."]}
            )
        if name not in groups:
            raise serializers.ValidationError(
                {"owner_group": [f"Your credential is not in group {name}."]}
            )
        if "owner_dn" in a and a["owner_dn"] != user.dn:
            raise serializers.ValidationError(
                {"owner_dn": ["A private pilot runs only its own credential's jobs."]}
            )
        owner_id, group_id, private = user.pk, groups[name], True
    pilot_type = a.get("pilot_type")
    if private and pilot_type is None:
        pilot_type = "private"
    return matching.Resource(
        site=a["site"],
        grid_ce=a.get("grid_ce"),
        setup=a["setup"],
        cpu_time=a["cpu_time"],
        platforms=frozenset(a.get("platform", [])),
        tags=frozenset(a.get("tag", [])),
        pilot_type=pilot_type,
        owner_id=owner_id,
        owner_group_id=group_id,
        private=private,
    )


class FileSizeSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()


class InputFileSerializer(FileSizeSerializer):
    sha256 = serializers.CharField()


class PayloadSerializer(serializers.Serializer):
    """What the pilot runs (null for a job without an executable)."""

    executable = serializers.CharField()
    arguments = serializers.ListField(child=serializers.CharField())
    environment = serializers.DictField(child=serializers.CharField())
    output_sandbox = serializers.ListField(child=serializers.CharField())
    input_sandbox = InputFileSerializer(many=True)
    stdout_name = serializers.CharField()
    stderr_name = serializers.CharField()
    wall_limit_seconds = serializers.FloatField(
        help_text="The job's CPU time times PayloadWallFactor; the pilot takes the lesser of "
        "this and its own time left."
    )
    max_output_bytes = serializers.IntegerField(
        help_text="The most bytes its outputs may upload (MaxOutputSandboxBytes): over it, the "
        "pilot keeps the head and tail of stdout and stderr and the files that fit."
    )

    @staticmethod
    def describe(job) -> dict | None:
        if not job.executable:
            return None
        return {
            "executable": job.executable,
            "arguments": list(job.arguments),
            "environment": dict(job.environment),
            "output_sandbox": list(job.output_sandbox),
            "input_sandbox": sandboxes.input_manifest(job.id),
            "stdout_name": job.stdout_name,
            "stderr_name": job.stderr_name,
            "wall_limit_seconds": float(job.cpu_time * gdpconfig.get("PayloadWallFactor")),
            "max_output_bytes": sandboxes.output_budget(),
        }


class MatchedJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField()
    owner_dn = serializers.CharField(allow_null=True)
    owner_group = serializers.CharField()
    setup = serializers.CharField()
    cpu_time = serializers.IntegerField()
    user_priority = serializers.IntegerField()
    requirements = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    task_queue = serializers.IntegerField()
    site = serializers.CharField()
    grid_ce = serializers.CharField()
    pilot_reference = serializers.CharField(
        help_text="The pilot the job is bound to: its reports name this reference."
    )
    payload = PayloadSerializer(allow_null=True)

    @staticmethod
    def describe(match) -> dict:
        job = match.job
        return {
            "id": job.id,
            "name": job.name,
            "owner": job.owner,
            "owner_dn": job.owner_dn,
            "owner_group": job.owner_group,
            "setup": job.setup,
            "cpu_time": job.cpu_time,
            "user_priority": job.user_priority,
            "requirements": job.requirements,
            "task_queue": match.task_queue_id,
            "site": job.site,
            "grid_ce": job.grid_ce,
            "pilot_reference": match.pilot_reference,
            "payload": PayloadSerializer.describe(job),
        }


class MatchingTaskQueueSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    owner = serializers.CharField()
    owner_group = serializers.CharField()
    setup = serializers.CharField()
    cpu_time = serializers.IntegerField()
    definition = serializers.DictField()
    priority = serializers.FloatField()
    waiting_jobs = serializers.IntegerField()
    probability = serializers.FloatField()
    fallback = serializers.BooleanField()

    @staticmethod
    def describe(row) -> dict:
        tq = row["tq"]
        return {
            "id": tq.id,
            "owner": tq.owner_name,
            "owner_group": tq.group_name,
            "setup": tq.setup,
            "cpu_time": tq.cpu_time,
            "definition": {
                "sites": sorted(tq.sites),
                "banned_sites": sorted(tq.banned_sites),
                "grid_ces": sorted(tq.grid_ces),
                "platforms": sorted(tq.platforms),
                "pilot_types": sorted(tq.pilot_types),
                "tags": sorted(tq.tags),
            },
            "priority": tq.priority,
            "waiting_jobs": row["waiting_jobs"],
            "probability": row["probability"],
            "fallback": row["fallback"],
        }


class AnalysisRowSerializer(serializers.Serializer):
    site = serializers.CharField()
    ce = serializers.CharField()
    matches = serializers.BooleanField()
    rule = serializers.CharField()
    detail = serializers.CharField()


class JobAnalysisSerializer(serializers.Serializer):
    waiting = serializers.BooleanField()
    status = serializers.CharField()
    task_queue = serializers.IntegerField(allow_null=True)
    matching_ces = serializers.IntegerField(required=False)
    ces = AnalysisRowSerializer(many=True)
