"""task submit, list, show, retry, kill: PanDA-style tasks over /api/v1/tasks/. A task's jobs
run its payload (a command, its input files, the outputs each brings back); `%RNDM:N` in an
argument, a variable's value or an output name reads N + the job's number (0, 1, ...)."""

from __future__ import annotations

import json
from typing import Any

from gridwms.cli.client import Client, CliError, Multipart, connect
from gridwms.cli.show import print_json, say, when
from gridwms.cli.submit import _parse_json, _read_text, sandbox_files

PAGE_SIZE = 200
# What the command line sets, each option's task field.
OPTIONS = {
    "name": "name",
    "group": "owner_group",
    "kind": "kind",
    "jobs": "n_jobs",
    "cpu_time": "job_cpu_time",
    "site": "site",
}


# --- submit --------------------------------------------------------------------------------------


def describe(base: Any, args) -> dict:
    """The task the file (a JSON object, or {}) and the options describe."""
    if not isinstance(base, dict):
        raise CliError("a task file holds one task (a JSON object)")
    task = dict(base)
    for option, field in OPTIONS.items():
        value = getattr(args, option, None)
        if value not in (None, ""):
            task[field] = value
    if args.run:
        task["executable"], task["arguments"] = args.run[0], list(args.run[1:])
    if args.env:
        env = dict(task.get("environment") or {})
        for pair in args.env:
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise CliError(f"--env {pair!r}: write NAME=VALUE")
            env[name] = value
        task["environment"] = env
    if args.output:
        task["output_sandbox"] = [*(task.get("output_sandbox") or []), *args.output]
    task.setdefault("kind", "analysis")
    if "name" not in task:
        raise CliError('the task\'s name? --name NAME (or "name" in the task file)')
    return task


def submit(args) -> int:
    if args.file is None and not args.run:
        raise CliError("what does the task run? a command after `--`, or a task FILE (JSON)")
    files = sandbox_files(args.sandbox or [])
    base = _parse_json(*_read_text(args.file)) if args.file is not None else {}
    task = describe(base, args)
    client = connect()
    if "owner_group" not in task:
        task["owner_group"] = _own_group(client)
    if files:
        form = Multipart()
        form.field("task", json.dumps(task))
        for path, name in files:
            form.file("input_sandbox", path, name)
        answer = client.call("POST", "/tasks/", body=form, headers=form.headers)
    else:
        answer = client.call("POST", "/tasks/", task)
    if args.json:
        print_json(answer)
    else:
        print(answer["id"])
    return 0


def _own_group(client: Client) -> str:
    groups = (client.call("GET", "/users/me/") or {}).get("groups") or []
    if len(groups) != 1:
        raise CliError(f"which group? --group G (you belong to {', '.join(groups) or 'none'})")
    return str(groups[0])


# --- list and show -------------------------------------------------------------------------------

COLUMNS = (("ID", "id", 8), ("NAME", "name", 30), ("KIND", "kind", 10), ("STATUS", "status", 10),
           ("JOBS", "jobs", 28), ("MODIFIED", "modified", 12))  # fmt: skip


def _jobs(task: dict) -> str:
    counts = task.get("job_counts") or {}
    return ", ".join(f"{n} {s}" for s, n in counts.items()) or "-"


def list_tasks(args) -> int:
    statuses = [s.strip() for given in args.status or [] for s in given.split(",") if s.strip()]
    query: dict[str, Any] = {"status": statuses or None, "ordering": "-id"}
    query["page_size"] = min(args.limit, PAGE_SIZE) if args.limit else PAGE_SIZE
    rows = []
    for task in connect().pages("/tasks/", query):
        rows.append(task)
        if args.limit and len(rows) >= args.limit:
            break
    if args.json:
        print_json(rows)
        return 0
    table = [[title for title, _, _ in COLUMNS]]
    for task in rows:
        values = {**task, "jobs": _jobs(task), "modified": when(task.get("modified"))}
        table.append([_fit(values.get(key), width) for _, key, width in COLUMNS])
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _fit(value: Any, width: int) -> str:
    text = " ".join(str(value if value not in (None, "") else "-").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def show(args) -> int:
    client = connect()
    task = client.call("GET", f"/tasks/{args.id}/")
    task["outputs"] = client.call("GET", f"/tasks/{args.id}/outputs/") or []
    if args.json:
        print_json(task)
        return 0
    _print_task(client, task)
    return 0


def _print_task(client: Client, task: dict) -> None:
    print(f"task {task['id']} {task['name']} ({task['kind']}, {task['owner_group']})")
    print(f"  status   {task['status']}: {task.get('status_reason') or '-'}")
    print(f"  jobs     {task.get('n_jobs')}: {_jobs(task)}")
    if task.get("executable"):
        command = " ".join([task["executable"], *task.get("arguments", [])])
        print(f"  runs     {command}")
        for name, value in (task.get("environment") or {}).items():
            print(f"  env      {name}={value}")
        inputs = ", ".join(f["name"] for f in task.get("input_sandbox") or []) or "-"
        print(f"  inputs   {inputs}")
        print(f"  outputs  {', '.join(['std.out', 'std.err', *task.get('output_sandbox', [])])}")
    outputs = task.get("outputs") or []
    if outputs:
        print("  files")
        for f in outputs:
            print(f"    job {f['job']}  {f['name']}  {f['size']} B  {client.base}{f['url']}")
    elif task.get("executable"):
        say("  no output yet: a job's files come with its pilot's final report")


# --- retry and kill ------------------------------------------------------------------------------


def _act(args, action: str) -> int:
    client = connect()
    task = client.call("POST", f"/tasks/{args.id}/{action}/")
    print(f"task {task['id']} {task['status']}: {task.get('status_reason') or '-'}")
    return 0


def retry(args) -> int:
    return _act(args, "retry")


def kill(args) -> int:
    return _act(args, "kill")
