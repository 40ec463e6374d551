from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.core.fields import RejectUnknownFieldsMixin, StrictBooleanField, StrictCharField
from brokerage.models import Task
from matcher.models import Job
from notifications.models import (
    WEBHOOK_MAX_LENGTH,
    WEBHOOK_VALIDATORS,
    Channel,
    Notice,
    NotificationPreference,
    NotificationRequest,
    Outcomes,
    Scope,
)

NO_ADDRESS = "your account has no e-mail address: add one to your account, or use a webhook"


def webhook_field(help_text: str):
    return StrictCharField(
        max_length=WEBHOOK_MAX_LENGTH,
        allow_blank=True,
        required=False,
        validators=WEBHOOK_VALIDATORS,
        help_text=help_text,
    )


class PreferenceSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    email = StrictBooleanField(
        required=False, help_text="e-mail me (to my account's address: refused without one)"
    )
    webhook_url = webhook_field("http(s) URL that receives a JSON POST; empty: none")
    scope = serializers.ChoiceField(
        choices=Scope.choices,
        required=False,
        help_text="tasks (default): each of my tasks, a job only when asked about; jobs: and "
        "each of my jobs outside a task",
    )
    modified = serializers.SerializerMethodField(help_text="null: never set")

    class Meta:
        model = NotificationPreference
        fields = ["email", "webhook_url", "outcomes", "scope", "modified"]

    def validate_email(self, value):
        if value and not self.instance.user.email:
            raise serializers.ValidationError(NO_ADDRESS)
        return value

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_modified(self, pref):
        return serializers.DateTimeField().to_representation(pref.modified) if pref.pk else None


class NoticeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Notice
        fields = [
            "id",
            "kind",
            "object_id",
            "channel",
            "name",
            "outcome",
            "final_state",
            "state",
            "attempts",
            "error",
            "created",
            "sent_at",
        ]
        read_only_fields = fields


class RequestSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    job = serializers.IntegerField(
        source="job_id", required=False, allow_null=True, min_value=1, max_value=2**63 - 1
    )
    task = serializers.IntegerField(
        source="task_id", required=False, allow_null=True, min_value=1, max_value=2**63 - 1
    )
    channels = serializers.ListField(
        child=serializers.ChoiceField(choices=Channel.choices),
        min_length=1,
        max_length=len(Channel.choices),
        required=False,
        help_text="email, webhook or both; default: email (refused without an address on "
        "your account)",
    )
    outcomes = serializers.ChoiceField(choices=Outcomes.choices, required=False)
    webhook_url = webhook_field("empty: the one of your preference")

    class Meta:
        model = NotificationRequest
        fields = ["id", "job", "task", "channels", "outcomes", "webhook_url", "created", "done"]
        read_only_fields = ["id", "created", "done"]

    def _visible(self, model, pk, field):
        user = self.context["request"].user
        if pk is not None and not model.objects.visible_to(user).filter(pk=pk).exists():
            raise serializers.ValidationError({field: [f"no {field} {pk} that you can see"]})

    def validate(self, attrs):
        user = self.context["request"].user
        job, task = attrs.get("job_id"), attrs.get("task_id")
        if self.instance is None:
            if (job is None) == (task is None):
                raise serializers.ValidationError({"job": ["give a job or a task (one of them)"]})
            field = "job" if job is not None else "task"
            self._visible(Job if job is not None else Task, job or task, field)
            taken = NotificationRequest.objects.filter(user=user, **{f"{field}_id": job or task})
            if taken.exists():
                raise serializers.ValidationError({field: ["you already asked about it"]})
        elif "job_id" in attrs or "task_id" in attrs:
            field = "job" if "job_id" in attrs else "task"
            raise serializers.ValidationError({field: ["cannot be changed: ask anew"]})
        channels = list(dict.fromkeys(attrs.get("channels") or ["email"]))
        if "channels" in attrs or self.instance is None:
            attrs["channels"] = channels
            if Channel.EMAIL in channels and not user.email:
                raise serializers.ValidationError({"channels": [NO_ADDRESS]})
        if Channel.WEBHOOK in attrs.get("channels", self.instance and self.instance.channels):
            url = attrs.get("webhook_url", self.instance and self.instance.webhook_url)
            own = NotificationPreference.objects.filter(user=user).exclude(webhook_url="")
            if not url and not own.exists():
                raise serializers.ValidationError(
                    {"webhook_url": ["give one, or set one in your preferences"]}
                )
        return attrs
