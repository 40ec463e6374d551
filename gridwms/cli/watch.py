"""wait (until jobs end) and why (a job is not running, or where it is): over the job, its
TaskQueue and the API's analysis of which CEs could take it (GET jobs/{id}/analysis/)."""

from __future__ import annotations

import time
from collections import defaultdict

from gridwms.cli import groups
from gridwms.cli.client import EXIT_SERVER, EXIT_USAGE, Client, CliError, connect
from gridwms.cli.show import count_states, duration, print_json, say, stamp

FINAL_STATES = frozenset({"finished", "failed", "cancelled", "closed"})
ENDED = FINAL_STATES | {"gone"}  # a job purged while waited for ends the wait too
RUNNING_STATES = frozenset({"sent", "starting", "running", "transferring"})
EXIT_ENDED_BADLY, EXIT_TIMEOUT = 3, 4
RETRIES = 5  # server errors in a row that end a wait
SHOWN_CES = 4  # CE names listed per rule
HISTORY = 5  # the last changes of state `why` shows


# --- wait ----------------------------------------------------------------------------------------


def wait(args) -> int:
    client = connect()
    ids, label = job_ids(client, args)
    jobs, missing = groups.fetch(client, ids)
    if missing:
        raise CliError(f"not found (or not yours): job {', '.join(map(str, missing))}")
    ended: dict[int, dict] = {}
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    failures = 0
    while True:
        for job in jobs:
            if job.get("status") in ENDED and job["id"] not in ended:
                ended[job["id"]] = job
                if not args.quiet:
                    print(ending(job), flush=True)
        waiting = [i for i in ids if i not in ended]
        if not waiting:
            break
        if deadline is not None and time.monotonic() >= deadline:
            left = [job for job in jobs if job["id"] in set(waiting)]
            say(
                f"{len(waiting)} of {len(ids)} jobs{label} still not ended after "
                f"{duration(args.timeout)} ({count_states(left)})"
            )
            return EXIT_TIMEOUT
        left_time = float("inf") if deadline is None else deadline - time.monotonic()
        time.sleep(max(min(args.interval, left_time), 0.0))
        try:
            jobs, gone = groups.fetch(client, waiting)
        except CliError as exc:  # a server restarting, a connection lost: a few in a row pass
            failures += 1
            if exc.code != EXIT_SERVER or failures >= RETRIES:
                raise
            left_time = float("inf") if deadline is None else deadline - time.monotonic()
            time.sleep(max(min(args.interval * 2**failures, left_time), 0.0))
            continue
        failures = 0
        jobs += [{"id": i, "status": "gone", "status_reason": "no longer found"} for i in gone]
    finished = [job for job in ended.values() if job.get("status") == "finished"]
    if len(ids) > 1 or args.quiet:
        print(f"{len(ids)} jobs{label} ended: {count_states(list(ended.values()))}")
    return 0 if len(finished) == len(ids) else EXIT_ENDED_BADLY


def ending(job: dict) -> str:
    reason = job.get("status_reason") or ""
    if job.get("status") == "finished" and reason.lower() in ("", "done", "finished"):
        reason = ""
    return f"job {job['id']} {job.get('status')}" + (f": {reason}" if reason else "")


def job_ids(client: Client, args) -> tuple[list[int], str]:
    """The ids named, or the group's: (ids, ' of group N' or '')."""
    if args.group is not None:
        if args.ids:
            raise CliError("give job ids or --group, not both")
        group = groups.load(args.group, client.base)
        return list(group["jobs"]), f" of group {group['group']}"
    if not args.ids:
        raise CliError("which jobs? give their ids, or --group (the last submission)")
    return list(dict.fromkeys(args.ids)), ""


# --- why -----------------------------------------------------------------------------------------


def why(args) -> int:
    client = connect()
    try:
        job = client.call("GET", f"/jobs/{args.id}/")
        analysis = client.call("GET", f"/jobs/{args.id}/analysis/") if waits(job) else None
    except CliError as exc:
        if exc.status is None or exc.message.startswith(f"job {args.id}"):
            raise
        raise CliError(f"job {args.id}: {exc.message}", exc.code, exc.status) from None
    if args.json:
        print_json({"job": job, "analysis": analysis})
        return 0
    name = f" ({job['name']})" if job.get("name") else ""
    print(f"job {job['id']}{name}: {headline(job)}")
    spent = real_durations(job)
    if spent:
        print(spent)
    if analysis is not None:
        for line in explain(analysis):
            print(line)
        queue = _task_queue(client, job.get("task_queue"))
        if queue:
            print(describe_queue(queue))
    for warning in job.get("warnings") or []:
        print(f"warning: {warning}")
    history = job.get("history") or []
    if history:
        print("Last changes:")
        for change in history[-HISTORY:]:
            step = f"{change.get('from_status') or 'submitted'} -> {change.get('to_status')}"
            reason = f"  {change['reason']}" if change.get("reason") else ""
            print(f"  {stamp(change, 'at'):<28}  {step}{reason}")
    return 0


def real_durations(job: dict) -> str:
    """'It waited 12 min for a pilot, then ran 3 min (real time).', from the server's real
    seconds (none from a server that gives none, or of times the simulated clock stood)."""
    waited, ran = job.get("waited_seconds"), job.get("ran_seconds")
    parts = []
    if waited is not None:
        verb = "has waited" if waits(job) else "waited"
        parts.append(f"{verb} {duration(waited)} for a pilot")
    if ran is not None:
        verb = "has run" if job.get("status") in RUNNING_STATES else "ran"
        parts.append(f"{verb} {duration(ran)}")
    return f"It {', then '.join(parts)} (real time)." if parts else ""


def waits(job: dict) -> bool:
    return job.get("status") == "activated"


def headline(job: dict) -> str:
    state, reason = job.get("status"), job.get("status_reason") or ""
    if state in FINAL_STATES:
        code = job.get("exit_code")
        shown = code in (None, 0) or "exit code" in reason
        extra = "" if shown else f" (exit code {code})"
        return f"it is {state}: {reason or 'nothing more to do'}{extra}."
    if state in RUNNING_STATES:
        return f"it is {state} at {job.get('site') or 'its site'}."
    if state == "activated":
        queue = job.get("task_queue")
        return (
            f"it waits in TaskQueue {queue} for a pilot that can take it."
            if queue
            else ("it waits to enter a TaskQueue.")
        )
    if state in ("defined", "assigned"):
        return "it waits for brokerage to choose where it may run."
    return f"it is {state}: {reason or 'no reason given'}."


def explain(analysis: dict) -> list[str]:
    """The CEs that could take the job, and for the others the first rule that fails, grouped
    by rule: what condor_q -better-analyze says."""
    ces = analysis.get("ces") or []
    fit = [row for row in ces if row.get("matches")]
    lines = []
    if not ces:
        return ["No active CE is known to the grid: nothing can run it now."]
    if fit:
        names = _names(fit)
        lines.append(
            f"{len(fit)} of {len(ces)} active CEs can take it ({names}): it waits for one of "
            "their pilots to ask for work and draw its TaskQueue."
        )
    else:
        lines.append(f"None of the {len(ces)} active CEs can take it:")
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for row in ces:
        if not row.get("matches"):
            by_rule[str(row.get("rule"))].append(row)
    if fit and by_rule:
        lines.append("The others cannot:")
    for rule, rows in sorted(by_rule.items(), key=lambda item: -len(item[1])):
        lines.append(f"  {rule}, {len(rows)} CE{'s' if len(rows) > 1 else ''} ({_names(rows)}): "
                     f"{rows[0].get('detail')}")  # fmt: skip
    return lines


def _names(rows: list[dict]) -> str:
    names = [f"{row.get('ce')}" for row in rows[:SHOWN_CES]]
    more = len(rows) - SHOWN_CES
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def describe_queue(queue: dict) -> str:
    priority, waiting = queue.get("priority"), queue.get("waiting_jobs")
    shown = f"{priority:.4g}" if isinstance(priority, (int, float)) else str(priority)
    jobs = f"{waiting} waiting job{'' if waiting == 1 else 's'}"
    return f"Its TaskQueue {queue.get('id')} has priority {shown} and {jobs}."


def _task_queue(client: Client, queue: int | None) -> dict | None:
    if not queue:
        return None
    try:
        return client.call("GET", f"/task-queues/{queue}/")
    except CliError as exc:
        if exc.code == EXIT_USAGE:  # not visible to this user: said without it
            return None
        raise


def waiting_reasons(client: Client, jobs: list[dict]) -> dict[int, str]:
    """Why each waiting job waits, in a few words: one analysis per TaskQueue (its jobs wait
    for the same reason)."""
    by_queue: dict[int, list[int]] = defaultdict(list)
    for job in jobs:
        if waits(job) and job.get("task_queue"):
            by_queue[job["task_queue"]].append(job["id"])
    reasons = {}
    for ids in by_queue.values():
        try:
            analysis = client.call("GET", f"/jobs/{ids[0]}/analysis/")
        except CliError as exc:
            if exc.code == EXIT_USAGE:
                continue
            raise
        reason = short(analysis)
        reasons.update(dict.fromkeys(ids, reason))
    return reasons


def short(analysis: dict) -> str:
    ces = analysis.get("ces") or []
    fit = sum(1 for row in ces if row.get("matches"))
    if fit:
        return f"waits for a pilot: {fit} CE{'s' if fit > 1 else ''} can take it"
    if not ces:
        return "no active CE"
    rules: dict[str, int] = defaultdict(int)
    for row in ces:
        rules[str(row.get("rule"))] += 1
    rule = max(rules, key=lambda r: rules[r])
    detail = next(row.get("detail") for row in ces if row.get("rule") == rule)
    return f"no CE can take it: {rule}: {detail}"
