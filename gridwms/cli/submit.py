"""submit: a JSON job (or a list), a DIRAC JDL, or a command; N jobs from one description
(`--count`, `{n}` replaced by each job's number); cores and memory as the grid's tags. Each
submission is recorded as a group (groups.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from gridwms.cli import groups
from gridwms.cli.client import Client, CliError, Multipart, connect
from gridwms.cli.show import print_json, say

DEFAULT_CPU_TIME = 3600  # a command given without a JSON job: one hour of CPU
NUMBER = "{n}"  # replaced by each job's number in every text of the description
# The requirements a JDL states itself: these options apply to a JSON job or a command.
JSON_ONLY = ("count", "cores", "memory", "cpu_time", "site", "name")


def submit(args) -> int:
    if args.file is None and not args.run:
        raise CliError("what to submit? a FILE (a JSON job or a JDL), or a command after `--`")
    files = sandbox_files(args.sandbox or [])
    text, label = _read_text(args.file) if args.file is not None else ("", "")
    if args.file is not None and _is_jdl(args.file, text):
        given = [f"--{o.replace('_', '-')}" for o in JSON_ONLY if getattr(args, o) not in _UNSET]
        if given or args.run:
            what = ", ".join(given) or "a command"
            raise CliError(f"{what}: for a JSON job or a command; a JDL states its own")
        client = connect()
        answers, single = [_submit_jdl(client, text, files)], True
    else:
        base = _parse_json(text, label) if args.file is not None else {}
        if files and isinstance(base, list):
            raise CliError("input sandbox files go with one job (a JSON object), not a list")
        specs = describe(base, args)
        single = isinstance(base, dict) and len(specs) == 1
        client = connect()
        answers = _submit_all(client, specs, files, single, args)
    if args.json:
        print_json(answers[0] if single else answers)
    else:
        for job in answers:
            print(job["id"])
            for warning in job.get("warnings") or []:
                say(f"warning: job {job['id']}: {warning}")
    _record(client, answers, args)
    return 0


_UNSET = (None, [])  # an option left out


def _record(client: Client, answers: list[dict], args) -> None:
    ids = [job["id"] for job in answers]
    what = " ".join(args.run) if args.run else (args.file or "")
    if args.count:
        what += f" x{args.count}"
    number = groups.record(client.base, ids, what)
    jobs = f"{len(ids)} job{'s' if len(ids) > 1 else ''}"
    say(f"group {number} ({jobs}): `gridwms status --group {number}`")


# --- what is submitted ---------------------------------------------------------------------------


def describe(base: Any, args) -> list[dict]:
    """The jobs to send: the file's job (or list), with the command and the options applied;
    with `--count`, that many, each numbered."""
    if isinstance(base, list):
        if args.run or args.count:
            raise CliError("a command or --count goes with one job (a JSON object), not a list")
        return [_apply(job, args) if isinstance(job, dict) else job for job in base]
    job = dict(base)
    if args.run:
        job["executable"], job["arguments"] = args.run[0], list(args.run[1:])
        if args.file is None:
            job.setdefault("cpu_time", DEFAULT_CPU_TIME)
            if not args.name:
                stem = Path(args.run[0]).name
                job.setdefault("name", f"{stem}-{NUMBER}" if args.count else stem)
    job = _apply(job, args)
    if not args.count:  # a `{n}` in a job sent once is the user's own text
        return [job]
    return [numbered(job, n) for n in range(args.first, args.first + args.count)]


def _apply(job: dict, args) -> dict:
    job = dict(job)
    if args.name:
        job["name"] = args.name
    if args.cpu_time:
        job["cpu_time"] = args.cpu_time
    if args.site:
        job["sites"] = list(dict.fromkeys(args.site))
    tags = resource_tags(args.cores, args.memory)
    if tags:
        have = job.get("tags") if isinstance(job.get("tags"), list) else []
        job["tags"] = list(dict.fromkeys([*have, *tags]))
    return job


def resource_tags(cores: int | None, memory: int | None) -> list[str]:
    """Cores and memory as the grid states them, in tags that a CE offers (DIRAC's
    convention): `MultiProcessor` and `<N>Processors` for more than one core, `<N>GB` of
    memory. The API has no fields of its own for them; a tag no active CE offers comes back
    as a warning."""
    tags = []
    if cores and cores > 1:
        tags += ["MultiProcessor", f"{cores}Processors"]
    if memory:
        tags.append(f"{memory}GB")
    return tags


def numbered(value: Any, n: int) -> Any:
    """`{n}` replaced by n in every text of a job's description (its arguments, name,
    environment values, output names...)."""
    if isinstance(value, str):
        return value.replace(NUMBER, str(n))
    if isinstance(value, list):
        return [numbered(v, n) for v in value]
    if isinstance(value, dict):
        return {k: numbered(v, n) for k, v in value.items()}
    return value


# --- reading -------------------------------------------------------------------------------------


def _read_text(name: str) -> tuple[str, str]:
    if name == "-":
        return sys.stdin.read(), "standard input"
    try:
        return Path(name).read_text(encoding="utf-8"), name
    except UnicodeDecodeError:
        raise CliError(f"{name}: not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"{name}: {exc.strerror or exc}") from None


def _is_jdl(name: str, text: str) -> bool:
    suffix = Path(name).suffix.lower()
    if suffix in (".jdl", ".json"):
        return suffix == ".jdl"
    return not text.lstrip().startswith(("{", "["))


def _parse_json(text: str, label: str) -> Any:
    try:
        job = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{label}: not valid JSON: {exc}") from None
    if not isinstance(job, (dict, list)):
        raise CliError(f"{label}: a job is a JSON object, or a list of them")
    return job


def sandbox_files(names: list[str]) -> list[tuple[Path, str]]:
    """Each input sandbox file with the name it is sent under (its base name), checked here
    so that the user hears about a missing file before anything is sent."""
    files, seen = [], set()
    for name in names:
        path = Path(name)
        if not path.is_file() or not os.access(path, os.R_OK):
            raise CliError(f"{name}: not a readable file")
        base = path.name
        if not base.isprintable() or "\\" in base:
            raise CliError(f"{name}: its name cannot be sent (a control character or '\\')")
        if base in seen:
            raise CliError(f"two input sandbox files are named {base}: the job sees one name")
        seen.add(base)
        files.append((path, base))
    return files


# --- sending -------------------------------------------------------------------------------------


def _submit_all(client: Client, specs: list, files, single: bool, args) -> list[dict]:
    """Without input files, one request (a list is stored all or nothing). With them, a
    request per job (the API takes files with one job): when one is refused, those already
    stored are recorded as the group and named."""
    if not files:
        answer = client.call("POST", "/jobs/", specs[0] if single else specs)
        return [answer] if single else list(answer)
    answers: list[dict] = []
    for job in specs:
        try:
            answers.append(_send(client, _job_form(job), files))
        except CliError as exc:
            if answers:
                _record(client, answers, args)
                exc.message = f"{exc.message} (after {len(answers)} of {len(specs)} jobs stored)"
            raise
    return answers


def _job_form(job: dict) -> Multipart:
    form = Multipart()
    form.field("job", json.dumps(job))
    return form


def _submit_jdl(client: Client, text: str, files: list[tuple[Path, str]]) -> Any:
    if not files:
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        return client.call("POST", "/jobs/", body=text.encode(), headers=headers)
    form = Multipart()
    form.field("jdl", text)
    return _send(client, form, files)


def _send(client: Client, form: Multipart, files: list[tuple[Path, str]]) -> Any:
    for path, name in files:
        form.file("input_sandbox", path, name)
    return client.call("POST", "/jobs/", body=form, headers=form.headers)
