"""login, submit, status, jobs, kill, reschedule."""

from __future__ import annotations

import datetime
import getpass
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from gridwms.cli.client import (
    DEFAULT_URL,
    EXIT_SERVER,
    EXIT_USAGE,
    Client,
    CliError,
    Multipart,
    connect,
    load_credentials,
    normalise_url,
    save_credentials,
)

PAGE_SIZE = 200  # rows asked for at a time (the API's max_page_size is 500)


def say(message: str) -> None:
    print(f"gridwms: {message}", file=sys.stderr)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


# --- login ---------------------------------------------------------------------------------------


def login(args) -> int:
    stored = load_credentials()
    url = normalise_url(
        args.url or os.environ.get("GRIDWMS_URL") or stored.get("url") or DEFAULT_URL
    )
    same_server = bool(stored.get("url")) and normalise_url(str(stored["url"])) == url
    user = args.user or _ask_user(str(stored.get("user") or "") if same_server else "")
    password = _read_password(args.password_stdin, user, url)
    try:
        answer = Client(url).call("POST", "/auth/token/", {"username": user, "password": password})
    except CliError as error:
        if error.status == 401:  # the token endpoint's answer to a wrong password
            raise CliError(f"{url} refused the user name or password", error.code, 401) from None
        raise
    token = answer.get("token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        raise CliError(f"{url} answered the login without a token", EXIT_SERVER)
    path = save_credentials({"url": url, "user": user, "token": token})
    host = urllib.parse.urlsplit(url).hostname or ""
    if url.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
        say(f"warning: {url} is plain HTTP: the token crosses the network unencrypted")
    print(f"logged in to {url} as {user}; token stored in {path}")
    return 0


def _ask_user(default: str) -> str:
    if not sys.stdin.isatty():
        if default:
            return default
        raise CliError("--user is required when there is no terminal to ask on")
    user = input(f"User{f' [{default}]' if default else ''}: ").strip() or default
    if not user:
        raise CliError("a user name is required")
    return user


def _read_password(from_stdin: bool, user: str, url: str) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {user} at {url}: ")
    else:
        raise CliError("no terminal to ask the password on: use --password-stdin")
    if not password:
        raise CliError("an empty password")
    return password


# --- submit --------------------------------------------------------------------------------------


def submit(args) -> int:
    text, label = _read_text(args.file)
    files = sandbox_files(args.sandbox or [])
    client = connect()
    if _is_jdl(args.file, text):
        answer = _submit_jdl(client, text, files)
    else:
        answer = _submit_json(client, _parse_json(text, label), files)
    if args.json:
        print_json(answer)
        return 0
    for job in answer if isinstance(answer, list) else [answer]:
        print(job["id"])
        for warning in job.get("warnings") or []:
            say(f"warning: job {job['id']}: {warning}")
    return 0


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


def _submit_json(client: Client, job: Any, files: list[tuple[Path, str]]) -> Any:
    if not files:
        return client.call("POST", "/jobs/", job)
    if not isinstance(job, dict):
        raise CliError("input sandbox files go with one job (a JSON object), not a list")
    form = Multipart()
    form.field("job", json.dumps(job))
    return _send(client, form, files)


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


# --- status, jobs --------------------------------------------------------------------------------

COLUMNS = [
    ("ID", "id", 10),
    ("NAME", "name", 32),
    ("STATUS", "status", 12),
    ("SITE", "site", 24),
    ("REASON", "status_reason", 48),
    ("CHANGED", "status_changed", 19),
]


def status(args) -> int:
    client = connect()
    found, missing = [], []
    for job in args.ids:
        try:
            found.append(client.call("GET", f"/jobs/{job}/"))
        except CliError as exc:
            if exc.code != EXIT_USAGE:
                raise
            missing.append(f"job {job}: {exc.message}")
    if args.json:
        print_json(found)
    elif found:
        print_table(found)
    for message in missing:
        say(message)
    return EXIT_USAGE if missing else 0


def jobs(args) -> int:
    client = connect()
    statuses = [s.strip() for given in args.status or [] for s in given.split(",") if s.strip()]
    # The API filters by status, site and owner; the name is matched here (a substring).
    wanted = PAGE_SIZE if args.name or not args.limit else min(args.limit, PAGE_SIZE)
    query = {"status": statuses, "site": args.site, "owner": args.owner, "page_size": wanted}
    rows = []
    for job in client.pages("/jobs/", query):
        if args.name and args.name.casefold() not in str(job.get("name") or "").casefold():
            continue
        rows.append(job)
        if args.limit and len(rows) >= args.limit:
            break
    if args.json:
        print_json(rows)
    elif rows:
        print_table(rows)
    else:
        say("no jobs match")
    return 0


def print_table(rows: list[dict]) -> None:
    cells = [[_cell(job, key, width) for _, key, width in COLUMNS] for job in rows]
    header = [title for title, _, _ in COLUMNS]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    for row in [header, *cells]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _cell(job: dict, key: str, width: int) -> str:
    value = job.get(key)
    if value in (None, ""):
        return "-"
    text = _local_time(value) if key == "status_changed" else str(value)
    text = " ".join(text.split())  # one line per job
    return text if len(text) <= width else text[: width - 1] + "…"


def _local_time(value: Any) -> str:
    try:
        when = datetime.datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if when.tzinfo is not None:
        when = when.astimezone()
    return when.strftime("%Y-%m-%d %H:%M:%S")


# --- kill, reschedule ----------------------------------------------------------------------------


def kill(args) -> int:
    return _act(args.ids, "kill", "killed")


def reschedule(args) -> int:
    return _act(args.ids, "reschedule", "rescheduled")


def _act(ids: list[int], action: str, done: str) -> int:
    client = connect()
    refused = 0
    for job in ids:
        try:
            answer = client.call("POST", f"/jobs/{job}/{action}/")
        except CliError as exc:
            if exc.code != EXIT_USAGE:
                raise
            refused += 1
            message = exc.message
            say(message if message.startswith(f"job {job} ") else f"job {job}: {message}")
            continue
        print(f"job {job} {done}: {(answer or {}).get('status', '?')}")
    return EXIT_USAGE if refused else 0
