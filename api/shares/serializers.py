from rest_framework import serializers

from api.core.fields import RejectUnknownFieldsMixin
from matcher.services import groups
from shares.models import GridGroup, GroupChange, User


class GridGroupSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    job_share = serializers.FloatField(
        help_text=f"JobShare, between 0 and {groups.JOB_SHARE_MAX:,.0f}: a group's expected share "
        "is its JobShare over the sum of those of the groups with waiting jobs."
    )
    comment = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="Why: recorded with each change in the group's history.",
    )

    class Meta:
        model = GridGroup
        fields = [
            "id",
            "name",
            "description",
            "job_share",
            "job_sharing",
            "generic_pilot",
            "production_management",
            "comment",
        ]

    def validate_job_share(self, value):
        """The bounds every edit of a JobShare keeps (matcher.services.groups), on a new group
        too."""
        problem = groups.job_share_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def create(self, validated_data):
        validated_data.pop("comment", None)  # a new group has no history yet
        return super().create(validated_data)


class MeSerializer(serializers.ModelSerializer):
    groups = serializers.SlugRelatedField(
        source="grid_groups", slug_field="name", many=True, read_only=True
    )

    class Meta:
        model = User
        fields = ["id", "username", "dn", "is_staff", "groups"]
        read_only_fields = fields


class GroupChangeSerializer(serializers.ModelSerializer):
    changed_by = serializers.CharField(source="changed_by.username", default=None, allow_null=True)
    old = serializers.JSONField()
    new = serializers.JSONField()

    class Meta:
        model = GroupChange
        fields = ["id", "field", "old", "new", "changed_by", "at", "comment"]
