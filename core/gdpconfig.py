"""gdpconfig: the typed registry of live parameters and their versioned values.

A parameter is declared once, in code, with its type, default, unit, help and validation
(`register`). Its value is stored as versions (`ParameterValue`: who, when, comment); the active
value is the newest version, or the default when there is none. Reads are cheap from any process:
each process keeps the active values in memory and re-reads them only when the table's newest
row id has changed, checked at most every `settings.GDPCONFIG_REFRESH_SECONDS` (2 s).
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction

from core import registry
from core.gdpconfig_shapes import Shape

INT, FLOAT, BOOL, STR, CHOICE, INT_LIST, STR_LIST, JSON = (
    "int",
    "float",
    "bool",
    "str",
    "choice",
    "int_list",
    "str_list",
    "json",
)
KINDS = (INT, FLOAT, BOOL, STR, CHOICE, INT_LIST, STR_LIST, JSON)


# The API's limit on JSON nesting (api.core.codec.MAX_DEPTH), for values typed as text too:
# checked before json.loads, which recurses and raised RecursionError (a 500) on "[" * 10**5.
MAX_DEPTH = 64

# Values are copied into columns, names, command lines and timedeltas, so every value is
# bounded: text (a STR value, a list's items, a JSON value's strings and keys) has at most
# Param.max_length characters and no control character (PostgreSQL text refuses NUL, which was a
# 500 in _store) nor lone surrogate (not UTF-8); a list at most Param.max_items items; a JSON
# value at most MAX_JSON_NODES values; numbers declare both bounds (register).
MAX_TEXT = 255
MAX_ITEMS = 100
MAX_JSON_NODES = 50_000
_BAD_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# A family member's name is stored in ParameterValue.name (100 characters); its suffix names a
# gshare or a workflow (CharField(max_length=64)).
MAX_NAME = 100
MAX_SUFFIX = 64


class ConfigError(ValueError):
    """A value that does not fit its parameter; `field` names the parameter."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: Any
    help: str
    unit: str = ""
    category: str = "general"
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    # The longest text it holds: the max_length of the column its value is copied into.
    max_length: int = MAX_TEXT
    max_items: int = MAX_ITEMS
    # JSON: its keys and structure (core.gdpconfig_shapes); an unknown key is refused.
    shape: Shape | None = field(default=None, compare=False)
    check: Callable[[Any], str | None] | None = field(default=None, compare=False)
    # Checks against the database (e.g. that a named group exists), run only when a value is
    # set: a stored value is never replaced by the default because the world changed since.
    check_on_set: Callable[[Any], str | None] | None = field(default=None, compare=False)
    # A family (PanDA's `DISK_THRESHOLD_<gshare>`): the name ends in `<suffix>`; any name with
    # the prefix is a member, typed and validated like the family, unset until stored.
    family: bool = False

    @property
    def prefix(self) -> str:
        return self.name.split("<", 1)[0] if self.family else self.name

    def coerce(self, raw: Any) -> Any:
        """Turn a JSON value, or the text of a form field, into a valid value of this parameter."""
        value = _coerce_kind(self, raw)
        _check_text(self, value)
        if self.kind in (INT_LIST, STR_LIST) and len(value) > self.max_items:
            raise ConfigError(self.name, f"at most {self.max_items} items, got {len(value)}")
        if self.shape is not None:
            problem = self.shape.problem(value)
            if problem:
                raise ConfigError(self.name, problem)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                if self.minimum is not None and item < self.minimum:
                    raise ConfigError(self.name, f"must be at least {self.minimum:g}, got {item}")
                if self.maximum is not None and item > self.maximum:
                    raise ConfigError(self.name, f"must be at most {self.maximum:g}, got {item}")
        if self.kind == STR_LIST and self.choices:
            wrong = [v for v in value if v not in self.choices]
            if wrong:
                raise ConfigError(
                    self.name, f"unknown {', '.join(wrong)}; known: {', '.join(self.choices)}"
                )
        if self.kind == CHOICE and value not in self.choices:
            raise ConfigError(self.name, f"must be one of {', '.join(self.choices)}; got {value!r}")
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ConfigError(self.name, problem)
        return value

    def to_text(self, value: Any) -> str:
        if self.kind == JSON:
            return json.dumps(value, indent=2)
        if self.kind in (INT_LIST, STR_LIST):
            return ", ".join(str(v) for v in value)
        if self.kind == BOOL:
            return "true" if value else "false"
        return str(value)


def _coerce_kind(p: Param, raw: Any) -> Any:
    kind = p.kind
    if kind == BOOL:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in {"true", "1", "yes", "on"}:
            return True
        if isinstance(raw, str) and raw.strip().lower() in {"false", "0", "no", "off"}:
            return False
        raise ConfigError(p.name, f"expected true or false, got {raw!r}")
    if kind == INT:
        return _to_int(p.name, raw)
    if kind == FLOAT:
        return _to_float(p.name, raw)
    if kind in (STR, CHOICE):
        if not isinstance(raw, str):
            raise ConfigError(p.name, f"expected text, got {type(raw).__name__}")
        return raw.strip()
    if kind == JSON:
        _check_depth(p.name, raw)
        if isinstance(raw, str):
            try:
                return json.loads(raw, parse_constant=_no_constant)
            except ValueError as exc:
                if not isinstance(exc, json.JSONDecodeError):
                    raise ConfigError(p.name, str(exc)) from None
                raise ConfigError(
                    p.name, f"not valid JSON: {exc.msg} (line {exc.lineno})"
                ) from None
        if isinstance(raw, (dict, list)):
            return raw
        raise ConfigError(p.name, f"expected a JSON object, got {type(raw).__name__}")
    if kind in (INT_LIST, STR_LIST):
        _check_depth(p.name, raw)
        items = raw
        if isinstance(raw, str):
            text = raw.strip()
            if text.startswith("["):
                try:
                    items = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise ConfigError(p.name, f"not a valid list: {exc.msg}") from None
            else:
                items = [part.strip() for part in text.split(",") if part.strip()]
        if not isinstance(items, list):
            raise ConfigError(p.name, f"expected a list, got {type(raw).__name__}")
        if kind == INT_LIST:
            return [_to_int(p.name, item) for item in items]
        if not all(isinstance(item, str) for item in items):
            raise ConfigError(p.name, "expected a list of text values")
        return [item.strip() for item in items]
    raise ConfigError(p.name, f"unknown parameter type {kind!r}")


def _text_problem(text: str, max_length: int) -> str | None:
    bad = _BAD_CHAR.search(text)
    if bad:
        return f"must not contain control characters (found U+{ord(bad.group()):04X})"
    if len(text) > max_length:
        return f"at most {max_length} characters, got {len(text)}"
    return None


def _check_text(p: Param, value: Any) -> None:
    """Every string in the value, JSON keys included, fits p.max_length and has no control
    character; a JSON value has at most MAX_JSON_NODES values. Iterative: any size is safe."""
    todo, nodes = [("", value)], 0
    while todo:
        path, item = todo.pop()
        nodes += 1
        if nodes > MAX_JSON_NODES:
            raise ConfigError(p.name, f"too large: more than {MAX_JSON_NODES} values")
        if isinstance(item, str):
            problem = _text_problem(item, p.max_length)
            if problem:
                raise ConfigError(p.name, f"{path}: {problem}" if path else problem)
        elif isinstance(item, dict):
            for key, sub in item.items():
                problem = _text_problem(str(key), p.max_length)
                if problem:
                    raise ConfigError(p.name, f"a key of {path or 'the object'}: {problem}")
                todo.append((f"{path}.{key}" if path else str(key), sub))
        elif isinstance(item, list):
            todo.extend(
                (f"{path}[{i}]" if path else f"item {i + 1}", v) for i, v in enumerate(item)
            )


def _check_depth(name: str, raw: Any) -> None:
    """Refuse JSON text, or a parsed value, nested deeper than MAX_DEPTH; iterative, so any
    depth is safe to check."""
    if isinstance(raw, str):
        if raw.count("[") + raw.count("{") <= MAX_DEPTH:
            return
        depth, in_string, escaped = 0, False, False
        for ch in raw:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    break
            elif ch in "]}":
                depth -= 1
        else:
            return
    elif isinstance(raw, (dict, list)):
        todo = [(raw, 1)]
        while todo:
            value, depth = todo.pop()
            if depth > MAX_DEPTH:
                break
            items = value.values() if isinstance(value, dict) else value
            todo.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
        else:
            return
    else:
        return
    raise ConfigError(name, f"nested too deeply (at most {MAX_DEPTH} levels)")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _to_int(name: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise ConfigError(name, f"expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            pass
    raise ConfigError(name, f"expected an integer, got {raw!r}")


def _to_float(name: str, raw: Any) -> float:
    if isinstance(raw, bool):
        raise ConfigError(name, f"expected a number, got {raw!r}")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise ConfigError(name, f"expected a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(name, "must be a finite number")
    return value


REGISTRY: dict[str, Param] = registry.PARAMETERS  # the store (core/registry.py)


def register(param: Param) -> Param:
    if param.kind not in KINDS:
        raise ValueError(f"{param.name}: unknown kind {param.kind}")
    # Every input bounded: a number without both bounds, or JSON without its structure, would
    # store what a column, a timedelta or the code reading it cannot take.
    if param.kind in (INT, FLOAT, INT_LIST) and (param.minimum is None or param.maximum is None):
        raise ValueError(f"{param.name}: a number parameter declares its minimum and maximum")
    if param.kind == JSON and param.shape is None:
        raise ValueError(f"{param.name}: a JSON parameter declares its shape (keys, structure)")
    param.coerce(param.default)  # a default that fails its own validation is a programming error
    REGISTRY[param.name] = param
    return param


def param(name: str) -> Param:
    try:
        found = REGISTRY[name]
    except KeyError:
        member = family_member(name)
        if member is None:
            raise ConfigError(name, "no such parameter") from None
        return member
    if found.family:
        raise ConfigError(name, f"is a family: set a member such as {found.prefix}X")
    return found


def family_member(name: str) -> Param | None:
    """The member `name` of a registered family (e.g. DISK_THRESHOLD_Express), or None."""
    for fam in REGISTRY.values():
        if fam.family and name.startswith(fam.prefix) and len(name) > len(fam.prefix):
            if suffix_problem(fam, name[len(fam.prefix) :]):
                return None
            return replace(fam, name=name, family=False)
    return None


def suffix_problem(fam: Param, suffix: str) -> str | None:
    """Why `suffix` cannot name a member of the family `fam` (it names a gshare or a workflow,
    and the member's name must fit ParameterValue.name), or None."""
    what = fam.name[len(fam.prefix) :].strip("<>")  # "gshare", shown on the page
    if not suffix.strip():
        return f"give the {what} part"
    if suffix != suffix.strip() or "/" in suffix or _BAD_CHAR.search(suffix):
        return f"the {what} part has no surrounding spaces, / or control characters"
    longest = min(MAX_SUFFIX, MAX_NAME - len(fam.prefix))
    if len(suffix) > longest:
        return f"the {what} part has at most {longest} characters"
    return None


def family_value(family_name: str, suffix: str) -> Any:
    """The stored value of a family member, or None when it is not set."""
    fam = REGISTRY[family_name]
    name = fam.prefix + suffix
    values = _active_values()
    if name not in values:
        return None
    try:
        return fam.coerce(values[name])
    except ConfigError:
        return None


def family_members() -> list[Param]:
    """The members that have a stored value."""
    from core.models import ParameterValue

    names = ParameterValue.objects.values_list("name", flat=True).distinct()
    members = (family_member(n) for n in names if n not in REGISTRY)
    return sorted((m for m in members if m is not None), key=lambda m: m.name)


# --- the per-process cache of active values ----------------------------------------------------

_lock = threading.Lock()
_cache: dict[str, Any] = {}
_cache_marker: tuple[int, int] | None = None
_checked_at = 0.0


def _marker() -> tuple[int, int]:
    from django.db.models import Count, Max

    from core.models import ParameterValue

    agg = ParameterValue.objects.aggregate(n=Count("id"), top=Max("id"))
    return (agg["n"] or 0, agg["top"] or 0)


def _load() -> dict[str, Any]:
    from core.models import ParameterValue

    values: dict[str, Any] = {}
    # Newest version per name wins; the table is small (one row per edit).
    for name, value in ParameterValue.objects.order_by("name", "version").values_list(
        "name", "value"
    ):
        values[name] = value
    return values


def invalidate() -> None:
    global _cache_marker, _checked_at
    with _lock:
        _cache_marker = None
        _checked_at = 0.0
        _coerced.clear()


def _active_values() -> dict[str, Any]:
    global _cache, _cache_marker, _checked_at
    now = time.monotonic()
    with _lock:
        if _cache_marker is not None and now - _checked_at < settings.GDPCONFIG_REFRESH_SECONDS:
            return _cache
        try:
            marker = _marker()
            if marker != _cache_marker:
                _cache = _load()
                _cache_marker = marker
        except DatabaseError:
            # Before migrations (or with the database down) every parameter reads its default.
            if transaction.get_connection().in_atomic_block:
                raise
            return {}
        _checked_at = now
        return _cache


_coerced: dict[str, Any] = {}


def get(name: str) -> Any:
    p = param(name)
    values = _active_values()
    with _lock:
        if _coerced.get("__source__") is not values:
            _coerced.clear()
            _coerced["__source__"] = values
        if name in _coerced:
            return _coerced[name]
    if name not in values:
        value = p.default
    else:
        try:
            value = p.coerce(values[name])
        except ConfigError:
            value = p.default  # a value stored under an older, looser definition
    with _lock:
        if _coerced.get("__source__") is values:
            _coerced[name] = value
    return value


def set_value(name: str, raw: Any, user=None, comment: str = "") -> Any:
    """Validate and store a new version; returns the stored value. Raises ConfigError."""

    p = param(name)
    value = p.coerce(raw)
    if p.check_on_set is not None:
        problem = p.check_on_set(value)
        if problem:
            raise ConfigError(p.name, problem)
    try:
        _store(p, value, user, comment)
    except IntegrityError:
        _store(p, value, user, comment)  # a concurrent first edit took version 1: go after it
    invalidate()
    return value


def _store(p: Param, value: Any, user, comment: str) -> None:
    from core.models import ParameterValue

    name = p.name
    with transaction.atomic():
        last = (
            ParameterValue.objects.select_for_update()
            .filter(name=name)
            .order_by("-version")
            .first()
        )
        ParameterValue.objects.create(
            name=name,
            value=value,
            version=(last.version + 1) if last else 1,
            changed_by=user if getattr(user, "pk", None) else None,
            comment=comment[:500],
            previous=last.value if last else p.default,
        )


def rollback(name: str, version: int, user=None) -> Any:
    """Make an earlier version active again, as a new version (history is never rewritten)."""
    from core.models import ParameterValue

    p = param(name)
    try:
        old = ParameterValue.objects.get(name=name, version=version)
    except ParameterValue.DoesNotExist:
        raise ConfigError(name, f"has no version {version}") from None
    return set_value(p.name, old.value, user=user, comment=f"rollback to version {version}")


def reset_to_default(name: str, user=None) -> Any:
    p = param(name)
    return set_value(name, p.default, user=user, comment="reset to default")
