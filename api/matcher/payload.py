"""What a job runs, as a submission gives it (docs/user-guide.md, What a job runs): the executable,
its arguments and environment, the output sandbox's names and patterns, stdout's and stderr's names.
Each bad value is a 400 naming its field with one message (never a child's position: "each argument
must be a string")."""

from __future__ import annotations

import re

from rest_framework import serializers

from api.core.fields import StrictCharField
from matcher.filenames import (
    MAX_NAME_CHARS,
    hidden_character,
    plain_name_problem,
    relative_path_problem,
)

MAX_ARGUMENTS = 256
MAX_ARGUMENT_CHARS = 4096
MAX_ENVIRONMENT = 64
MAX_OUTPUT_PATTERNS = 64
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TextListField(serializers.ListField):
    """A list of strings checked as a whole: one message naming what is wrong."""

    def __init__(self, *, what: str, max_items: int, max_chars: int, check=None, **kwargs):
        kwargs.setdefault("child", serializers.CharField(max_length=max_chars))
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", list)
        super().__init__(max_length=max_items, **kwargs)
        self.what, self.max_items, self.max_chars, self.check = what, max_items, max_chars, check

    def to_internal_value(self, data):
        if not isinstance(data, list):
            raise serializers.ValidationError(f"Must be a list of strings, not {_kind(data)}.")
        if len(data) > self.max_items:
            raise serializers.ValidationError(
                f"{len(data)} items; at most {self.max_items} {self.what}s."
            )
        for item in data:
            if not isinstance(item, str):
                raise serializers.ValidationError(f"each {self.what} must be a string")
            if len(item) > self.max_chars:
                raise serializers.ValidationError(
                    f"each {self.what} is at most {self.max_chars} characters"
                )
            problem = self.check(item) if self.check else None
            if problem:
                raise serializers.ValidationError(problem)
        return list(data)


class EnvironmentField(serializers.DictField):
    """{"NAME": "value"}: names [A-Za-z_][A-Za-z0-9_]*, values strings."""

    def __init__(self, **kwargs):
        kwargs.setdefault("child", serializers.CharField(max_length=MAX_ARGUMENT_CHARS))
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", dict)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError(f"Must be an object, not {_kind(data)}.")
        if len(data) > MAX_ENVIRONMENT:
            raise serializers.ValidationError(f"{len(data)} variables; at most {MAX_ENVIRONMENT}.")
        for name, value in data.items():
            if not ENV_NAME.match(name):
                raise serializers.ValidationError(
                    f"{name[:100]!r} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"
                )
            if not isinstance(value, str):
                raise serializers.ValidationError(f"the value of {name} must be a string")
            if len(value) > MAX_ARGUMENT_CHARS or "\x00" in value:
                raise serializers.ValidationError(
                    f"the value of {name} is at most {MAX_ARGUMENT_CHARS} characters, no NUL"
                )
        return dict(data)


def _kind(data) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(data), "a number" if isinstance(data, int | float) else type(data).__name__
    )


def _no_nul(value: str) -> str | None:
    return "must not hold a NUL" if "\x00" in value else None


def executable_problem(value: str) -> str | None:
    if "\x00" in value or "\n" in value or "\r" in value:
        return "must not hold a NUL or a line break"
    problem = hidden_character(value)
    if problem:
        return problem
    if value and not value.startswith("/") and any(p == ".." for p in value.split("/")):
        return f"{value!r} has a '..' component: it would leave the working directory"
    return None


class PayloadFieldsMixin(serializers.Serializer):
    """The submission's fields of what a job runs."""

    executable = StrictCharField(
        max_length=1024,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="An absolute path, a path inside the working directory or a command name. "
        "Empty: nothing to run (the pilot sleeps the job's CPU time, as before).",
    )
    arguments = TextListField(
        what="argument", max_items=MAX_ARGUMENTS, max_chars=MAX_ARGUMENT_CHARS, check=_no_nul
    )
    environment = EnvironmentField()
    output_sandbox = TextListField(
        what="output sandbox pattern",
        max_items=MAX_OUTPUT_PATTERNS,
        max_chars=1024,
        check=relative_path_problem,
        help_text="File names or glob patterns to bring back (stdout and stderr always are).",
    )
    stdout_name = StrictCharField(
        max_length=MAX_NAME_CHARS, required=False, default="std.out", trim_whitespace=False
    )
    stderr_name = StrictCharField(
        max_length=MAX_NAME_CHARS, required=False, default="std.err", trim_whitespace=False
    )

    def validate_executable(self, value):
        problem = executable_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate_stdout_name(self, value):
        return _plain(value)

    def validate_stderr_name(self, value):
        return _plain(value)


def _plain(value: str) -> str:
    problem = plain_name_problem(value)
    if problem:
        raise serializers.ValidationError(problem)
    return value
