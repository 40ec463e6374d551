"""The structure of a JSON-valued gdpconfig parameter: its keys, their types and bounds.

Every JSON parameter declares a shape (gdpconfig.register refuses one without), so a key nothing
reads (a typo, say) is refused naming its path instead of being stored and silently ignored, and
a value that code later copies into a column or a timedelta is bounded like the column is.
A problem is returned as text starting with the path ("WeekSlice.Weight: ..."); None: it fits.
"""

from __future__ import annotations

import math
from typing import Any


def _at(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else "null"
    )


class Shape:
    def problem(self, value: Any, path: str = "") -> str | None:
        raise NotImplementedError


class Text(Shape):
    def __init__(self, max_length: int = 255, choices: tuple[str, ...] = (), empty: bool = True):
        self.max_length, self.choices, self.empty = max_length, choices, empty

    def problem(self, value, path=""):
        if not isinstance(value, str):
            return _at(path, f"expected text, got {_kind(value)}")
        if not value and not self.empty:
            return _at(path, "must not be empty")
        if len(value) > self.max_length:
            return _at(path, f"at most {self.max_length} characters, got {len(value)}")
        if self.choices and value not in self.choices:
            return _at(path, f"must be one of {', '.join(self.choices)}; got {value!r}")
        return None


class Number(Shape):
    def __init__(self, minimum: float, maximum: float, integer: bool = False):
        self.minimum, self.maximum, self.integer = minimum, maximum, integer

    def problem(self, value, path=""):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _at(path, f"expected a number, got {_kind(value)}")
        if self.integer and not isinstance(value, int):
            return _at(path, f"expected a whole number, got {value!r}")
        if not math.isfinite(value):
            return _at(path, "must be a finite number")
        if not self.minimum <= value <= self.maximum:
            return _at(path, f"must be between {self.minimum:g} and {self.maximum:g}, got {value}")
        return None


class ListOf(Shape):
    def __init__(self, item: Shape, max_items: int = 100):
        self.item, self.max_items = item, max_items

    def problem(self, value, path=""):
        if not isinstance(value, list):
            return _at(path, f"expected a list, got {_kind(value)}")
        if len(value) > self.max_items:
            return _at(path, f"at most {self.max_items} items, got {len(value)}")
        for i, item in enumerate(value):
            found = self.item.problem(item, f"{path}[{i}]")
            if found:
                return found
        return None


class Obj(Shape):
    """An object with the keys of `fields` (those in `required` must be present). Any other key
    is refused, unless `rest` is given: then it is a name (`rest_key`) with a `rest` value, as
    the pools of SubmitPoolBackends or the slices of a WMSHistory instance are."""

    def __init__(
        self,
        fields: dict[str, Shape] | None = None,
        required: tuple[str, ...] = (),
        rest: Shape | None = None,
        rest_key: Text | None = None,
        max_keys: int = 100,
    ):
        self.fields = fields or {}
        self.required = required
        self.rest = rest
        self.rest_key = rest_key or Text(64, empty=False)
        self.max_keys = max_keys

    def problem(self, value, path=""):
        if not isinstance(value, dict):
            return _at(path, f"expected an object, got {_kind(value)}")
        if len(value) > self.max_keys:
            return _at(path, f"at most {self.max_keys} keys, got {len(value)}")
        missing = [k for k in self.required if k not in value]
        if missing:
            return _at(path, f"missing {', '.join(missing)}")
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            shape = self.fields.get(key)
            if shape is None:
                if self.rest is None:
                    known = ", ".join(self.fields) or "none"
                    return f"{where}: unknown key (known: {known})"
                found = self.rest_key.problem(key, f"{path} key" if path else "key")
                if found:
                    return found
                shape = self.rest
            found = shape.problem(item, where)
            if found:
                return found
        return None
