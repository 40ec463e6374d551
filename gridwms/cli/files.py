"""log (once, or following a running job) and get (the output sandbox, into one directory).

`get` exits with EXIT_INCOMPLETE (3) when what it brought is not all the job wrote: its pilot
cut or left out outputs over MaxOutputSandboxBytes, or none came back from a payload that ran;
it says what."""

from __future__ import annotations

import os
import re
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

from gridwms.cli.client import EXIT_SERVER, Client, CliError, connect
from gridwms.cli.jobs import say

FINAL_STATES = frozenset({"finished", "failed", "cancelled", "closed"})
NAME_BYTES = 255  # a file name's length on most file systems
FOLLOW_RETRIES = 5  # server errors in a row that end `log --follow`
EXIT_INCOMPLETE = 3  # `get`: the job's outputs are not all there


# --- log -----------------------------------------------------------------------------------------


def about(job: int, exc: CliError) -> CliError:
    """The server's refusal, saying which job it was about."""
    if exc.status is None or exc.message.startswith(f"job {job}"):
        return exc
    return CliError(f"job {job}: {exc.message}", exc.code, exc.status)


def log(args) -> int:
    try:
        return _log(args)
    except CliError as exc:
        raise about(args.id, exc) from None


def _log(args) -> int:
    client = connect()
    stream = "stderr" if args.stderr else "stdout"
    if args.follow:
        return follow(client, args.id, stream, args.tail, args.interval)
    query = {"stream": stream, "tail": args.tail}
    with client.open("GET", f"/jobs/{args.id}/log/", query=query) as response:
        for chunk in client.chunks(response):
            sys.stdout.buffer.write(chunk)
    sys.stdout.flush()
    return 0


def follow(client: Client, job: int, stream: str, tail: int | None, interval: float) -> int:
    """Print the stream's new lines every `interval` seconds until the job ends. While it runs
    the server shows a window of the latest output (the pilot's last heartbeat), so each poll
    prints what follows the lines already shown; a line is printed once it is complete."""
    shown = LogFollower()
    query = {"stream": stream, "tail": tail}
    failures = 0
    while True:
        try:
            final, text = _poll(client, job, query)
        except CliError as exc:  # a server restarting, a connection lost: a few in a row pass
            failures += 1
            if exc.code != EXIT_SERVER or failures >= FOLLOW_RETRIES:
                raise
            time.sleep(interval * 2**failures)
            continue
        failures = 0
        for line in shown.new_lines(text, final):
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if final:
            return 0
        query = {"stream": stream}
        time.sleep(interval)


def _poll(client: Client, job: int, query: dict) -> tuple[bool, str]:
    """(whether the job has ended, the stream's text). The state is read first: the text read
    after a final state is the whole stored stream."""
    state = (client.call("GET", f"/jobs/{job}/") or {}).get("status")
    with client.open("GET", f"/jobs/{job}/log/", query=query) as response:
        text = b"".join(client.chunks(response)).decode("utf-8", "replace")
    return state in FINAL_STATES, text


class LogFollower:
    KEEP = 200  # the lines remembered to find where a new window resumes

    def __init__(self):
        self.shown: list[str] = []

    def new_lines(self, text: str, final: bool) -> list[str]:
        lines = text.split("\n")
        partial = lines.pop()  # "" when the text ends with a newline
        if final and partial:
            lines.append(partial)
        fresh = lines[resume_at(self.shown, lines) :]
        self.shown = (self.shown + fresh)[-self.KEEP :]
        return fresh


def resume_at(shown: list[str], lines: list[str]) -> int:
    """Where the unseen part of `lines` starts: after the longest run of them that ends like
    `shown` ends (the earliest such run); 0 when none does."""
    if not shown:
        return 0
    best_end, best_run = 0, 0
    for end, line in enumerate(lines):
        if line != shown[-1]:
            continue
        run = 1
        while run < len(shown) and run <= end and lines[end - run] == shown[-1 - run]:
            run += 1
        if run > best_run:
            best_end, best_run = end + 1, run
    return best_end


# --- get -----------------------------------------------------------------------------------------


def get(args) -> int:
    try:
        return _get(args)
    except CliError as exc:
        raise about(args.id, exc) from None


def _get(args) -> int:
    client = connect()
    job = client.call("GET", f"/jobs/{args.id}/") or {}
    listing = client.call("GET", f"/jobs/{args.id}/sandbox/")
    entries = listing.get("results", []) if isinstance(listing, dict) else listing or []
    missing = incomplete(args.id, job, bool(entries))
    if not entries:
        if missing:
            say(missing)
            return EXIT_INCOMPLETE
        ended = job.get("status") in FINAL_STATES
        say(f"job {args.id} has no output files" + ("" if ended else " yet"))
        return 0
    shown_root = args.dir or f"job_{args.id}"
    root = Path(shown_root)
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    taken: set[str] = set()
    for n, entry in enumerate(entries, 1):
        name = str(entry.get("name") or "")
        parts = unique(safe_parts(name) or [f"file_{n}"], taken)
        target = prepare(root, parts)
        size = download(client, source(client, args.id, entry), target)
        print(f"{os.path.join(shown_root, *parts)}  ({size} bytes)")
    if missing:
        say(missing)
        return EXIT_INCOMPLETE
    return 0


def incomplete(job_id: int, job: dict, any_files: bool) -> str | None:
    """What is missing of the job's outputs, said for the user; None when nothing is."""
    truncated = str(job.get("output_truncated") or "")
    if truncated:
        return f"job {job_id}: output truncated: {truncated}"
    ran = job.get("wall_seconds") is not None and bool(job.get("executable"))
    if not any_files and ran and job.get("status") in FINAL_STATES:
        return f"job {job_id} ran, but none of its output came back"
    return None


def safe_parts(name: str) -> list[str]:
    """A relative name as path components that stay inside the directory: no empty, `.` or
    `..` component, no control character, each at most 255 bytes."""
    parts = []
    for part in re.split(r"[\\/]+", name):
        part = "".join(ch for ch in part if ch.isprintable()).strip()
        part = part.encode()[:NAME_BYTES].decode("utf-8", "ignore")
        if part not in ("", ".", ".."):
            parts.append(part)
    return parts


def unique(parts: list[str], taken: set[str]) -> list[str]:
    """Two names that would land on one file (also on a case-insensitive file system): the
    later gets `_2`, `_3`... before its extension."""
    stem, dot, ext = parts[-1].rpartition(".")
    if not stem:  # no extension, or a dot file
        stem, dot, ext = parts[-1], "", ""
    candidate, n = parts, 1
    while "/".join(candidate).casefold() in taken:
        n += 1
        candidate = [*parts[:-1], f"{stem}_{n}{dot}{ext}"]
    taken.add("/".join(candidate).casefold())
    return candidate


def prepare(root: Path, parts: list[str]) -> Path:
    """The file's path under `root`, its directories made; a symbolic link on the way (which
    could lead outside) is refused, never followed."""
    here = root
    for part in parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            raise CliError(f"{here} is in the way (not a plain directory)")
        here.mkdir(exist_ok=True)
    target = here / parts[-1]
    if target.is_dir() and not target.is_symlink():
        raise CliError(f"{target} is a directory")
    return target


def source(client: Client, job: int, entry: dict) -> str:
    """The listing's `url` when it is on this server (the token goes nowhere else), else the
    API's own path for the file."""
    url = entry.get("url")
    if isinstance(url, str) and url:
        absolute = urllib.parse.urljoin(client.base + "/", url)
        if absolute.startswith(client.base + "/"):
            return absolute
    name = urllib.parse.quote(str(entry.get("name") or ""), safe="/")
    return f"/jobs/{job}/sandbox/{name}"


def download(client: Client, path: str, target: Path) -> int:
    """Streamed into a fresh temporary file beside the target, then renamed over it (a link
    already at the target is replaced, not followed)."""
    tmp = target.with_name(f".{uuid.uuid4().hex}.part")
    size = 0
    try:
        with client.open("GET", path) as response, tmp.open("xb") as out:
            for chunk in client.chunks(response):
                out.write(chunk)
                size += len(chunk)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return size
