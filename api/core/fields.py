"""Strict serializer fields: a wrong JSON type is an error, never silently converted."""

import unicodedata
from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.fields import SkipField, empty, get_error_detail
from rest_framework.settings import api_settings
from rest_framework.utils import html

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


def control_character(value: str, categories: tuple[str, ...] = ("Cc",)) -> str | None:
    """The first character of `value` in these Unicode categories, as U+XXXX; None if none."""
    for ch in value:
        if unicodedata.category(ch) in categories:
            return f"U+{ord(ch):04X}"
    return None


class NameField(StrictCharField):
    """A name people read (pages, e-mail subjects, CSV exports): no control characters, so no
    line break can split a header or a row, no NUL."""

    default_error_messages = {"control": "Must not hold a control character ({code})."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        code = control_character(value)
        if code:
            self.fail("control", code=code)
        return value


class StrictBooleanField(serializers.BooleanField):
    """true or false, never DRF's "yes", "on", 1 or "t"; a form-encoded body's text is "true"
    or "false"."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if data in ("true", "false") and html.is_html_input(getattr(self.root, "initial_data", {})):
            return data == "true"
        return self.fail("invalid", input=data)


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


class UnboundFieldsMixin:
    """For a serializer on the pilots' hot path: validate JSON input against the class's
    declared fields as they are, without DRF's per-instance deep copy of every field (a third
    of a match request's validation). Only for flat serializers whose fields keep no
    per-instance state (no nested serializers, no related fields, `source` = the field's name).
    Every offending field is named at once, unknown ones included; form input goes DRF's way."""

    def run_validation(self, data=empty):
        if html.is_html_input(data) or not isinstance(data, Mapping):
            return super().run_validation(data)
        # Straight to DRF's Serializer: to_internal_value below names the unknown keys with the
        # other errors, so RejectUnknownFieldsMixin's look at `self.fields` (which would make
        # the very deep copy this mixin avoids) is not needed.
        return serializers.Serializer.run_validation(self, data)

    def to_internal_value(self, data):
        if html.is_html_input(data) or not isinstance(data, Mapping):
            return super().to_internal_value(data)
        declared = self._declared_fields
        errors = {k: ["Unknown field."] for k in sorted(set(data) - set(declared))}
        validated = {}
        for name, field in declared.items():
            if field.read_only:
                continue
            check = getattr(self, f"validate_{name}", None)
            try:
                value = field.run_validation(data.get(name, empty))
                if check is not None:
                    value = check(value)
            except serializers.ValidationError as exc:
                errors[name] = exc.detail
            except DjangoValidationError as exc:
                errors[name] = get_error_detail(exc)
            except SkipField:
                pass
            else:
                validated[name] = value
        if errors:
            raise serializers.ValidationError(errors)
        return validated

    def _read_only_defaults(self):
        # DRF's version walks the deep-copied fields; a flat input serializer has none of these.
        if any(f.read_only and f.default is not empty for f in self._declared_fields.values()):
            return super()._read_only_defaults()
        return {}
