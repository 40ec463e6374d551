from rest_framework import serializers

from api.core.fields import RejectUnknownFieldsMixin
from shares.models import GridGroup, GroupChange, User


class GridGroupSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    job_share = serializers.FloatField(min_value=0.0, help_text="JobShare (≥ 0).")
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
    changed_by = serializers.CharField(source="changed_by.username", default=None)
    old = serializers.JSONField()
    new = serializers.JSONField()

    class Meta:
        model = GroupChange
        fields = ["id", "field", "old", "new", "changed_by", "at", "comment"]
