"""Strict serializer fields: a wrong JSON type is an error, never silently converted."""

from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

NON_FIELD = api_settings.NON_FIELD_ERRORS_KEY


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    default_error_messages = {"not_text": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text")
        return super().to_internal_value(data)


class NamedRelatedField(serializers.SlugRelatedField):
    """A related object named by a string field (`slug_field`). A name that is not a string,
    or holds a NUL character (which PostgreSQL text cannot store, so the lookup itself would
    fail with a server error), names nothing: 400, "no dataset named x"."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.queryset is not None and "error_messages" not in kwargs:
            kind = self.queryset.model._meta.verbose_name
            self.error_messages["does_not_exist"] = f"There is no {kind} named {{value}}."

    def to_internal_value(self, data):
        if not isinstance(data, str) or "\x00" in data:
            self.fail("does_not_exist", slug_name=self.slug_field, value=str(data)[:100])
        return super().to_internal_value(data)


class StrictStringListField(serializers.ListField):
    def __init__(self, **kwargs):
        kwargs.setdefault("child", StrictCharField(max_length=128, allow_blank=False))
        kwargs.setdefault("max_length", 200)
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", list)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            self.fail("not_a_list", input_type=type(data).__name__)
        return super().to_internal_value(data)


class RejectUnknownFieldsMixin:
    """Answer 400 naming every key the serializer does not know, instead of ignoring it, and
    together with every other offending field: a client fixes its request in one round."""

    def run_validation(self, data=empty):
        unknown = {}
        if isinstance(data, dict):
            unknown = {k: ["Unknown field."] for k in sorted(set(data) - set(self.fields))}
        try:
            value = super().run_validation(data)
        except serializers.ValidationError as exc:
            if not unknown:
                raise
            detail = exc.detail if isinstance(exc.detail, dict) else {NON_FIELD: exc.detail}
            raise serializers.ValidationError({**unknown, **detail}) from None
        if unknown:
            raise serializers.ValidationError(unknown)
        return value
