"""A task's `architecture`, parsed into one structure, and the CPU/GPU/software checks on it.

Three spellings (docs/developer-guide.md, PanDA brokerage, CPU and GPU hardware):
- the old string `sw_platform[@base_platform][#host_cpu_spec][&host_gpu_spec]`,
- the shorthand GPU suffix `&vendor:model=…:vram>=…:cuda>=…:driver>=…:uarch=…` (and `model!=`),
- the new JSON `{"sw_platform", "base_platform", "cpu_specs": [...], "gpu_spec": {...}}`.

All become {"sw_platform", "base_platform", "cpu_specs": [{"arch", "vendor", "instr"}] or
[], "gpu_spec": {...} or None}, with `*` (any) values dropped as PanDA's reformat does. Parsing
is strict: anything malformed raises ArchitectureError with a message naming the part, so the
API refuses it at submission instead of a cycle tripping over it later.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from packaging.version import InvalidVersion, Version

OPS = (">=", "<=", "!=", "==", ">", "<", "=")  # longest first
GPU_KEYS = {
    "cuda": "version",
    "vram": "vram",
    "driver": "driver_version",
    "uarch": "microarchitecture",
    "model": "model",
}
GPU_JSON_KEYS = {"vendor", "model", "version", "vram", "microarchitecture", "driver_version"}
CPU_JSON_KEYS = {"arch", "vendor", "instr", "type"}


class ArchitectureError(ValueError):
    pass


class Architecture(TypedDict):
    """What parse() returns (the module docstring's structure)."""

    sw_platform: str
    base_platform: str
    cpu_specs: list[dict[str, Any]]  # {"arch", "vendor", "instr"}, wildcards dropped
    gpu_spec: dict[str, Any] | None


if TYPE_CHECKING:

    class TaskLike(Protocol):
        """What the software checks read of a Task."""

        container_name: str
        only_tags_for_fc: bool
        release: str


def _check_regexp(text: str, what: str) -> None:
    if text == "*":  # the wildcard (any), dropped by parse(); not a regexp
        return
    try:
        re.compile(text)
    except re.error as exc:
        raise ArchitectureError(
            f"{what}: {text!r} is not a valid regular expression ({exc})"
        ) from None


# sw_platform is read as a regexp over the queue's cmtconfigs (x86_64-el9-gcc13-opt, gcc.*);
# base_platform is a name, then the pilot's +container image (el9+docker://atlas/athena:25.0).
SW_PLATFORM = re.compile(r"[\w.*+?|()\[\]{}$\\,-]*")
BASE_PLATFORM = re.compile(r"(?:[A-Za-z0-9][\w.-]*(?:\+[\w.:/@+-]+)?)?")
NAME = re.compile(r"[\w.+-]+")


def _check_platforms(sw_platform: str, base_platform: str) -> None:
    if not SW_PLATFORM.fullmatch(sw_platform):
        raise ArchitectureError(f"sw_platform: {sw_platform!r} is not a platform name or regexp")
    _check_regexp(sw_platform, "sw_platform")
    if not BASE_PLATFORM.fullmatch(base_platform):
        raise ArchitectureError(
            f"base_platform: {base_platform!r} is not name[+container image], e.g. el9"
        )


def _check_name(text: str, what: str) -> None:
    """A CPU vendor or instruction set: compared by name, or * for any."""
    if text != "*" and not NAME.fullmatch(text):
        raise ArchitectureError(f"{what}: {text!r} is not a name (or * for any)")


def _check_constraint(text: str, what: str) -> str:
    """An operator-prefixed version constraint such as '>=12.0'; returns it with '=' as '=='."""
    if not isinstance(text, str):
        raise ArchitectureError(f"{what}: expected text such as '>=12.0', got {text!r}")
    text = text.strip()
    for op in OPS:
        if text.startswith(op):
            value = text[len(op) :].strip()
            try:
                Version(value)
            except InvalidVersion:
                raise ArchitectureError(f"{what}: {value!r} is not a version number") from None
            return ("==" if op == "=" else op) + value
    raise ArchitectureError(f"{what}: {text!r} needs an operator (==, >=, <=, >, <, !=)")


def _cpu_from_old(text: str) -> list[dict[str, str]]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    specs = []
    for part in text.split("|") if text else []:
        fields = ([*part.split("-"), "*", "*"])[:3]
        if len(part.split("-")) > 3:
            raise ArchitectureError(
                f"host_cpu_spec: {part!r} has more than architecture-vendor-instruction_set"
            )
        arch, vendor, instr = (f.strip() or "*" for f in fields)
        _check_regexp(arch, "host_cpu_spec architecture")
        _check_name(vendor, "host_cpu_spec vendor")
        _check_name(instr, "host_cpu_spec instruction set")
        specs.append({"arch": arch, "vendor": vendor, "instr": instr})
    return specs


def _gpu_from_old(text: str) -> dict[str, Any] | None:
    parts = text.split(":")
    head = parts[0].strip()
    if not head:
        raise ArchitectureError("host_gpu_spec: the GPU vendor is missing after '&'")
    vendor, _, model = head.partition("-")
    _check_regexp(vendor, "host_gpu_spec vendor")  # matched as a regexp against the GPUs'
    _check_regexp(model or "*", "host_gpu_spec model")
    spec: dict[str, Any] = {"vendor": vendor, "model": model or "*"}
    for part in parts[1:]:
        part = part.strip()
        for op in OPS:
            key, sep, value = part.partition(op)
            if sep and key and key.strip() in GPU_KEYS:
                break
        else:
            raise ArchitectureError(
                f"host_gpu_spec: {part!r} is not key<op>value with a key among "
                + ", ".join(GPU_KEYS)
            )
        key = key.strip()
        value = value.strip()
        if key == "model":
            if op not in ("=", "==", "!="):
                raise ArchitectureError(f"host_gpu_spec: model takes = or !=, not {op}")
            _check_regexp(value, "host_gpu_spec model")
            spec["model"] = {"pattern": value, "excl": True} if op == "!=" else value
        elif key == "uarch":
            if op not in ("=", "=="):
                raise ArchitectureError(f"host_gpu_spec: uarch takes =, not {op}")
            spec["microarchitecture"] = value
        else:
            spec[GPU_KEYS[key]] = _check_constraint(op + value, f"host_gpu_spec {key}")
    return spec


def _parse_old(text: str) -> Architecture:
    for mark, part in (("@", "base_platform"), ("#", "host_cpu_spec"), ("&", "host_gpu_spec")):
        if text.count(mark) > 1 and not (mark == "@" and "+" in text):
            raise ArchitectureError(f"{part}: {mark!r} appears more than once")
    m = cast("re.Match[str]", re.match(r"[^@#&^]*", text))  # matches, if only ""
    sw_platform = m.group(0).strip()
    base = re.search(r"@([^#&^]*)", text)
    cpu = re.search(r"#([^@&^]*)", text)
    gpu = re.search(r"&([^@#^]*)", text)
    if cpu is not None:
        cpu_specs = _cpu_from_old(cpu.group(1))
    elif text[:1] in ("^", "@", "&") or not sw_platform:
        cpu_specs = []
    else:
        # Without '#', the first field of the cmtconfig is the CPU architecture.
        cpu_specs = [{"arch": sw_platform.split("-")[0], "vendor": "*", "instr": "*"}]
    base_platform = base.group(1).strip() if base else ""
    _check_platforms(sw_platform, base_platform)
    return {
        "sw_platform": sw_platform,
        "base_platform": base_platform,
        "cpu_specs": cpu_specs,
        "gpu_spec": _gpu_from_old(gpu.group(1)) if gpu else None,
    }


def _parse_json(text: str) -> Architecture:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArchitectureError(f"not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(data, dict):
        raise ArchitectureError("the JSON architecture must be an object")
    unknown = set(data) - {"sw_platform", "base_platform", "cpu_specs", "gpu_spec", "cpu_pref"}
    if unknown:
        raise ArchitectureError(f"unknown keys {sorted(unknown)}")
    for key in ("sw_platform", "base_platform"):
        if not isinstance(data.get(key, ""), str):
            raise ArchitectureError(f"{key} must be text")
    cpu_specs = []
    spec: dict[str, Any]  # a CPU spec in the loop, then the GPU spec
    raw_cpus = data.get("cpu_specs") or []
    if not isinstance(raw_cpus, list):
        raise ArchitectureError("cpu_specs must be a list of objects")
    for i, c in enumerate(raw_cpus):
        if not isinstance(c, dict) or set(c) - CPU_JSON_KEYS:
            raise ArchitectureError(f"cpu_specs[{i}] must be an object with arch, vendor, instr")
        spec = {k: str(c.get(k) or "*") for k in ("arch", "vendor", "instr")}
        _check_regexp(spec["arch"], f"cpu_specs[{i}].arch")
        _check_name(spec["vendor"], f"cpu_specs[{i}].vendor")
        _check_name(spec["instr"], f"cpu_specs[{i}].instr")
        cpu_specs.append(spec)
    gpu = data.get("gpu_spec")
    if gpu is not None:
        if not isinstance(gpu, dict):
            raise ArchitectureError("gpu_spec must be an object")
        unknown = set(gpu) - GPU_JSON_KEYS
        if unknown:
            raise ArchitectureError(f"gpu_spec: unknown keys {sorted(unknown)}")
        spec = {"vendor": str(gpu.get("vendor") or "*")}
        _check_regexp(spec["vendor"], "gpu_spec.vendor")
        model = gpu.get("model", "*")
        if isinstance(model, dict):
            if set(model) - {"pattern", "excl"} or not isinstance(model.get("pattern"), str):
                raise ArchitectureError("gpu_spec.model: expected {'pattern': …, 'excl': true}")
            _check_regexp(model["pattern"], "gpu_spec.model.pattern")
            model = {"pattern": model["pattern"], "excl": bool(model.get("excl", False))}
            if not model["excl"]:
                model = model["pattern"]
        elif isinstance(model, str):
            _check_regexp(model, "gpu_spec.model")
        else:
            raise ArchitectureError("gpu_spec.model must be a regexp or {pattern, excl}")
        spec["model"] = model
        for key in ("version", "vram", "driver_version"):
            if key in gpu:
                spec[key] = _check_constraint(gpu[key], f"gpu_spec.{key}")
        if "microarchitecture" in gpu:
            ua = gpu["microarchitecture"]
            if not (
                isinstance(ua, str)
                or (isinstance(ua, list) and all(isinstance(u, str) for u in ua))
            ):
                raise ArchitectureError("gpu_spec.microarchitecture must be text or a list of text")
            spec["microarchitecture"] = ua
        gpu = spec
    sw_platform = data.get("sw_platform", "").strip()
    base_platform = data.get("base_platform", "").strip()
    _check_platforms(sw_platform, base_platform)
    return {
        "sw_platform": sw_platform,
        "base_platform": base_platform,
        "cpu_specs": cpu_specs,
        "gpu_spec": gpu,
    }


def _drop_wildcards(spec: Architecture) -> Architecture:
    """PanDA's reformat: '*' means no requirement, so `#*` and `&*` ask for nothing."""
    cpus = []
    for c in spec["cpu_specs"]:
        kept = {k: v for k, v in c.items() if v not in ("*", "")}
        if kept:
            cpus.append(kept)
    gpu = spec["gpu_spec"]
    if gpu is not None:
        gpu = {k: v for k, v in gpu.items() if v not in ("*", "")}
        gpu = gpu or None
    return {**spec, "cpu_specs": cpus, "gpu_spec": gpu}


def empty() -> Architecture:
    """No architecture: no platform, any CPU, no GPU (what parse("") gives; a Task's default)."""
    return {"sw_platform": "", "base_platform": "", "cpu_specs": [], "gpu_spec": None}


def parse(text: str) -> Architecture:
    """The task's architecture as one structure; raises ArchitectureError. Parsed once, when
    the task is submitted: the Task stores the result (architecture_spec), which the checks
    and the pages read."""
    text = (text or "").strip()
    if not text:
        return empty()
    if text[0] in "'\"" or text[-1] in "'\"":
        # The seed's ART warning: a quoted value would otherwise be read as a bogus sw_platform.
        raise ArchitectureError(
            "the architecture is wrapped in quotes; give it without them "
            "(an ART header passes its value literally)"
        )
    spec = _parse_json(text) if text.startswith("{") else _parse_old(text)
    return _drop_wildcards(spec)


# --- matching against a queue ----------------------------------------------------------------


def _accepts(queue_values: list[str] | None, task_value: str | None, regexp: bool = False) -> bool:
    """A queue attribute list accepts a task value (seed: 'blah' accepts blah or nothing; with
    'excl', only blah; "" or 'any' accept any value). A queue that publishes no list for the
    attribute takes only tasks that do not name it: an absent value is no wildcard
    (docs/developer-guide.md, Absent values and wildcards; PanDA's JsonSoftwareCheck)."""
    values = [v for v in queue_values or () if v != "excl"]
    if task_value is None:
        return "excl" not in (queue_values or ())
    if "any" in values or "" in values or task_value in values:
        return True
    if regexp:
        try:
            pattern = re.compile(f"^{task_value}$")
        except re.error:
            return False
        return any(pattern.match(v) for v in values)
    return False


def _queue_arch(software: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for a in software.get("architectures") or []:
        if isinstance(a, dict) and a.get("type") == kind:
            return a
    return None


def compare_version(value: Any, constraint: str) -> bool:
    """'>=12.0' against a published value; `!=` works (the seed's reading, not PanDA's code)."""
    for op in OPS:
        if constraint.startswith(op):
            want = constraint[len(op) :]
            break
    else:
        return False
    try:
        have, want_v = Version(str(value)), Version(want)
    except InvalidVersion:
        return False
    return {
        ">=": have >= want_v,
        "<=": have <= want_v,
        "!=": have != want_v,
        "==": have == want_v,
        "=": have == want_v,
        ">": have > want_v,
        "<": have < want_v,
    }[op]


def check_cpu(spec: Architecture, software: dict[str, Any]) -> str | None:
    """None when the queue's CPU fits the task; otherwise why not."""
    cpu = _queue_arch(software, "cpu")
    cpus = spec["cpu_specs"]
    if not cpus:
        if cpu and any("excl" in (v if isinstance(v, list) else []) for v in cpu.values()):
            return "queue CPU reserved (excl) for tasks that ask for it"
        return None
    if not software.get("architectures"):
        return "task asks for a CPU but the queue publishes no architectures"
    if cpu is None:
        return "queue publishes no cpu architecture"
    for c in cpus:
        if (
            _accepts(cpu.get("arch"), c.get("arch"), regexp=True)
            and _accepts(cpu.get("vendor"), c.get("vendor"))
            and _accepts(cpu.get("instr"), c.get("instr"))
        ):
            return None
    return (
        f"cpu {cpus} not in arch {cpu.get('arch')} vendor {cpu.get('vendor')} "
        f"instr {cpu.get('instr')}"
    )


def check_gpu(
    spec: Architecture, software: dict[str, Any], gpu_rows: list[dict[str, Any]]
) -> str | None:
    """Two stages: the queue's CRIC architectures say whether it has GPUs at all; the worker-node
    GPU summaries say which."""
    gpu_cric = _queue_arch(software, "gpu")
    want = spec["gpu_spec"]
    if want is None:
        if gpu_cric and any(
            "excl" in (v if isinstance(v, list) else []) for v in gpu_cric.values()
        ):
            return "queue GPUs reserved (excl) for tasks that ask for them"
        return None
    if gpu_cric is None:
        return "queue is not GPU-capable (no gpu in its architectures)"
    vendor = want.get("vendor")
    attributes = {k: v for k, v in want.items() if k != "vendor"}
    if not gpu_rows:
        if attributes:
            return f"no worker-node GPU data to check {sorted(attributes)}"
        # A wildcard request ("any NVIDIA GPU"): CRIC's vendor list decides.
        if (
            vendor
            and not any(
                re.match(vendor, v, re.IGNORECASE) for v in gpu_cric.get("vendor") or ["any"]
            )
            and "any" not in (gpu_cric.get("vendor") or ["any"])
        ):
            return f"GPU vendor {vendor} not in {gpu_cric.get('vendor')}"
        return None
    if vendor and not any(
        re.match(vendor, str(r.get("vendor", "")), re.IGNORECASE) for r in gpu_rows
    ):
        # Vendors are text in the worker-node GPU summaries (a row without one would not sort).
        return f"no {vendor} GPU among {sorted({r.get('vendor') for r in gpu_rows})}"  # type: ignore[type-var]
    model = want.get("model")
    if model:
        pattern, excl = (model["pattern"], True) if isinstance(model, dict) else (model, False)
        hit = any(re.match(pattern, str(r.get("model", "")), re.IGNORECASE) for r in gpu_rows)
        if hit == excl:
            models = sorted({str(r.get("model")) for r in gpu_rows})
            return f"model {'excludes' if excl else 'needs'} {pattern}: {models}"
    for key, column in (
        ("vram", "vram"),
        ("version", "framework_version"),
        ("driver_version", "driver_version"),
    ):
        if key in want:
            bad = [r.get(column) for r in gpu_rows if not compare_version(r.get(column), want[key])]
            if bad:
                return f"{key} {want[key]} fails for {bad}"
    if "microarchitecture" in want:
        allowed = want["microarchitecture"]
        allowed = [allowed] if isinstance(allowed, str) else allowed
        if not any(r.get("architecture") in allowed for r in gpu_rows):
            archs = sorted({str(r.get("architecture")) for r in gpu_rows})
            return f"microarchitecture {allowed} not among {archs}"
    return None


RELEASE = re.compile(r"^(?P<project>[A-Za-z][\w]*)-(?P<version>.+)$")
NIGHTLY = re.compile(r"(^|[-_])rel_\d+$|\d{4}-\d{2}-\d{2}T\d{4}$")


def parse_release(release: str) -> tuple[str, str, bool]:
    """'Athena-21.0.38' -> ('Athena', '21.0.38', False); nightlies ('…-rel_3', dates): True."""
    m = RELEASE.match(release.strip())
    if not m:
        raise ArchitectureError(f"release {release!r} is not Project-version")
    version = m.group("version")
    return m.group("project"), version, bool(NIGHTLY.search(version))


def check_container(
    task: TaskLike, software: dict[str, Any], all_tags: list[dict[str, Any]]
) -> str | None:
    name = task.container_name
    tags = software.get("tags") or []
    if task.only_tags_for_fc:
        if any(t.get("container_name") == name or name in (t.get("sources") or []) for t in tags):
            return None
        return f"container {name} is not among the queue's tags (onlyTagsForFC)"
    containers = software.get("containers") or []
    if "any" in containers or "/cvmfs" in containers:
        return None
    if any(c and name.startswith(c) for c in containers):
        return None
    for t in all_tags:
        if t.get("container_name") == name:
            for src in t.get("sources") or []:
                if any(c and src.startswith(c) for c in containers):
                    return None
    return f"container {name} not in containers {containers}"


def resolve_platform(sw_platform: str, cmtconfigs: list[str]) -> str:
    """The sw_platform read as a regexp becomes the first of the queue's cmtconfigs it fully
    matches (seed: "The regexp in sw_platform is resolved to a relevant string in the
    cmtconfigs list of the queue"); a name the queue lists, or one nothing matches, stays as
    it is. Every sw_platform is tried as a regexp, also one that matches its own text
    (`gcc.*` matches ".*"): telling patterns from names by that test left such patterns
    unresolved."""
    if not sw_platform or sw_platform in cmtconfigs:
        return sw_platform
    try:
        pattern = re.compile(sw_platform)
    except re.error:
        return sw_platform
    return next((c for c in cmtconfigs if pattern.fullmatch(c)), sw_platform)


def check_release(task: TaskLike, spec: Architecture, software: dict[str, Any]) -> str | None:
    project, version, nightly = parse_release(task.release)
    cvmfs = software.get("cvmfs") or []
    containers = software.get("containers") or []
    sw_platform = resolve_platform(spec["sw_platform"], software.get("cmtconfigs") or [])
    if "any" in cvmfs or ("nightlies" if nightly else "atlas") in cvmfs:
        if "any" in containers or "/cvmfs" in containers:
            return None
        if sw_platform and sw_platform in (software.get("cmtconfigs") or []):
            return None
    if not nightly and ("any" in containers or not spec["base_platform"]):
        for t in software.get("tags") or []:
            if (t.get("cmtconfig"), t.get("project"), t.get("release")) == (
                sw_platform,
                project,
                version,
            ):
                return None
    return f"{task.release} for {sw_platform or 'no platform'} not available (cvmfs {cvmfs})"


def check_software(
    task: TaskLike,
    spec: Architecture,
    queue_releases: list[str],
    software: dict[str, Any],
    gpu_rows: list[dict[str, Any]],
    all_tags: list[dict[str, Any]],
) -> str | None:
    """The hardware, then the release/cache/nightly or container rules; None when it fits."""
    if spec["cpu_specs"] or spec["gpu_spec"] or software.get("architectures"):
        problem = check_cpu(spec, software) or check_gpu(spec, software, gpu_rows)
        if problem:
            return problem
    if "ANY" in queue_releases:
        return None
    if "AUTO" in queue_releases:
        if task.container_name:
            return check_container(task, software, all_tags)
        if task.release:
            return check_release(task, spec, software)
        return None
    if task.container_name:
        return "queue does not publish its containers (releases is neither ANY nor AUTO)"
    if (
        task.release
        and task.release.split("-", 1)[-1] not in queue_releases
        and task.release not in queue_releases
    ):
        return f"release {task.release} not in {queue_releases}"
    return None
