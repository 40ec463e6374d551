"""Job groups: what one `submit` sent, kept on the user's side.

The API has no notion of a submission once it is stored (a list of jobs is one transaction,
then single jobs), so each `submit` writes its job ids into a file of its own in the config
directory (`groups/<N>.json` beside credentials.json); `status`, `wait`, `kill` and
`reschedule` take `--group N` (or `--group` alone: the last one). The jobs are then read and
acted on with the API's lists and bulk actions."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

from gridwms.cli.client import EXIT_SERVER, Client, CliError, config_path, normalise_url

LAST = "last"
PER_JOB = 20  # up to this many jobs are read one by one; more, from the list of the user's jobs
LIST_PAGE = 500  # the API's max_page_size
BULK = 1000  # ids per bulk action (the API's MaxBulkJobs by default)


def groups_dir() -> Path:
    path = config_path()
    if path.name == "credentials.json":
        return path.parent / "groups"
    return path.with_name(f"{path.stem}.groups")  # GRIDWMS_CONFIG=alice.json: alice.groups/


def record(url: str, ids: list[int], what: str) -> int:
    """The new group's number: one more than the highest recorded."""
    folder = groups_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = {
        "url": url,
        "submitted": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "what": what,
        "jobs": ids,
    }
    number = max(_numbers(folder), default=0) + 1
    while True:  # two submits at once: the second takes the next number
        try:
            fd = os.open(folder / f"{number}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            number += 1
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"group": number, **body}, f, indent=1)
            f.write("\n")
        return number


def _numbers(folder: Path) -> list[int]:
    try:
        names = [p.stem for p in folder.glob("*.json")]
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit()]


def load(which: str, url: str) -> dict[str, Any]:
    """The group `which` (a number, or `last`: the newest submitted to this server)."""
    folder = groups_dir()
    if which == LAST:
        for number in sorted(_numbers(folder), reverse=True):
            group = _read(folder / f"{number}.json")
            if group and _same(group, url):
                return group
        raise CliError(f"no group submitted to {url} is recorded in {folder}")
    if not which.isdigit():
        raise CliError(f"not a group number: {which!r} (see `gridwms groups`)")
    group = _read(folder / f"{int(which)}.json")
    if group is None:
        raise CliError(f"no group {which} in {folder} (see `gridwms groups`)")
    if not _same(group, url):
        raise CliError(f"group {which} was submitted to {group.get('url')}, not {url}")
    return group


def _read(path: Path) -> dict[str, Any] | None:
    try:
        group = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None
    ids = group.get("jobs") if isinstance(group, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise CliError(f"{path} is not a group of jobs")
    return group


def _same(group: dict[str, Any], url: str) -> bool:
    try:
        return normalise_url(str(group.get("url") or "")) == url
    except CliError:
        return False


def recorded() -> list[dict[str, Any]]:
    folder = groups_dir()
    out = []
    for number in sorted(_numbers(folder)):
        try:
            group = _read(folder / f"{number}.json")
        except CliError:
            continue
        if group:
            out.append(group)
    return out


# --- the jobs of a group, on the server ----------------------------------------------------------


def fetch(client: Client, ids: list[int]) -> tuple[list[dict], list[int]]:
    """(the jobs found, in the order of `ids`; the ids not found: purged, or not yours)."""
    if len(ids) <= PER_JOB:
        found = {}
        for job in ids:
            try:
                found[job] = client.call("GET", f"/jobs/{job}/")
            except CliError as exc:
                if exc.status != 404:
                    raise
    else:
        found = _from_list(client, set(ids))
    return [found[i] for i in ids if i in found], [i for i in ids if i not in found]


def _from_list(client: Client, wanted: set[int]) -> dict[int, dict]:
    """The user's jobs, newest first, read until the oldest wanted id is passed (a group's jobs
    are the user's own: the owner filter keeps others' out of the pages)."""
    me = client.call("GET", "/users/me/") or {}
    query = {"owner": me.get("username"), "ordering": "-id", "page_size": LIST_PAGE}
    oldest, found = min(wanted), {}
    for job in client.pages("/jobs/", query):
        if job.get("id") in wanted:
            found[job["id"]] = job
        if job.get("id", 0) <= oldest or len(found) == len(wanted):
            break
    return found


def act(client: Client, action: str, ids: list[int]) -> tuple[list[int], dict[int, str]]:
    """Kill or reschedule with the API's bulk action, BULK ids at a time: (done, refused with
    the reason)."""
    done: list[int] = []
    refused: dict[int, str] = {}
    for start in range(0, len(ids), BULK):
        answer = client.call("POST", "/jobs/bulk/", {"action": action, "ids": ids[start:][:BULK]})
        if not isinstance(answer, dict):
            raise CliError("the server answered the bulk action without an outcome", EXIT_SERVER)
        done += answer.get("done") or []
        refused.update({r["id"]: str(r.get("reason")) for r in answer.get("refused") or []})
    return done, refused
