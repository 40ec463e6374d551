"""DIRAC-style JDL (ClassAd syntax) to a job submission, with HTCondor's ClassAd library.

The attributes that define where and how the job may run are read, and what it runs
(Executable, Arguments split as a shell would without expanding anything, InputSandbox,
OutputSandbox, StdOutput, StdError, ExecutionEnvironment "KEY=value" strings); the rest stays
in the stored JDL text.
"""

from __future__ import annotations

import shlex
from typing import Any

import classad2

from matcher.taskqueues import MULTI_VALUED_FIELDS

# JDL attribute (lower case) -> submission key. DIRAC accepts singular and plural forms.
ATTRIBUTES = {
    "jobname": "name",
    "ownergroup": "owner_group",
    "setup": "setup",
    "cputime": "cpu_time",
    "maxcputime": "cpu_time",
    "site": "sites",
    "sites": "sites",
    "bannedsite": "banned_sites",
    "bannedsites": "banned_sites",
    "gridce": "grid_ces",
    "gridces": "grid_ces",
    "gridrequiredces": "grid_ces",
    "platform": "platforms",
    "platforms": "platforms",
    "submitpool": "submit_pools",
    "submitpools": "submit_pools",
    "pilottype": "pilot_types",
    "pilottypes": "pilot_types",
    "gridmiddleware": "grid_middlewares",
    "gridmiddlewares": "grid_middlewares",
    "tag": "tags",
    "tags": "tags",
    "priority": "user_priority",
    "userpriority": "user_priority",
    "executable": "executable",
    "arguments": "arguments",
    "inputsandbox": "input_sandbox",
    "outputsandbox": "output_sandbox",
    "stdoutput": "stdout_name",
    "stderror": "stderr_name",
    "executionenvironment": "environment",
}
LIST_KEYS = {*MULTI_VALUED_FIELDS, "input_sandbox", "output_sandbox"}


def _payload_value(attr: str, key: str, value: Any) -> Any:
    """Arguments as a shell splits them (no expansion); ExecutionEnvironment's "KEY=value"
    strings as a mapping. Anything else as it is (the serializer checks the types)."""
    if key == "arguments" and isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise JDLError(attr, f"cannot be split into arguments ({exc})") from None
    if key == "environment":
        entries = [value] if isinstance(value, str) else value
        if not isinstance(entries, list):
            raise JDLError(attr, 'must be a list of "KEY=value" strings')
        environment = {}
        for entry in entries:
            if not isinstance(entry, str) or "=" not in entry:
                raise JDLError(attr, f'{entry!r} is not a "KEY=value" string')
            name, _, text = entry.partition("=")
            environment[name] = text
        return environment
    return value


class JDLError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_jdl(
    text: str, max_attributes: int | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Parse a JDL into (submission payload, {payload key: JDL attribute name}).

    Raises JDLError naming the JDL attribute (or "JDL" when the text does not parse, or has
    more than `max_attributes` attributes).
    """
    body = text.strip()
    if not body:
        raise JDLError("JDL", "is empty")
    if not body.startswith("["):
        body = f"[{body}]"  # DIRAC accepts the attribute list without its brackets
    try:
        ad = classad2.ClassAd(body)
    except Exception as exc:  # the library raises ClassAdException or ValueError
        raise JDLError("JDL", f"not valid ClassAd syntax ({exc})") from None
    if max_attributes is not None and len(ad) > max_attributes:
        raise JDLError(
            "JDL",
            f"{len(ad)} attributes; at most {max_attributes} (the MaxJDLAttributes parameter)",
        )

    payload: dict[str, Any] = {}
    names: dict[str, str] = {}
    for attr in ad.keys():
        key = ATTRIBUTES.get(attr.lower())
        if key is None:
            continue
        if key in payload:
            raise JDLError(attr, f"repeats {names[key]}")
        try:
            value = ad.eval(attr)
        except Exception as exc:
            raise JDLError(attr, f"cannot be evaluated ({exc})") from None
        if isinstance(value, classad2.Value):
            raise JDLError(attr, f"evaluates to {value.name.lower()}")
        if key in LIST_KEYS and isinstance(value, str):
            value = [value]  # Site = "LCG.CERN.ch" is a list of one
        payload[key] = _payload_value(attr, key, value)
        names[key] = attr
    return payload, names
