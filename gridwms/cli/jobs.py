"""login, logout, whoami, status, jobs, kill, reschedule, groups."""

from __future__ import annotations

import getpass
import os
import sys
import urllib.parse

from gridwms.cli import groups, watch
from gridwms.cli.client import (
    DEFAULT_URL,
    EXIT_SERVER,
    EXIT_USAGE,
    Client,
    CliError,
    config_path,
    connect,
    load_credentials,
    normalise_url,
    save_credentials,
)
from gridwms.cli.show import count_states, print_json, print_table, say, when

__all__ = ["print_json", "say"]  # files.py's, from here

PAGE_SIZE = 200  # rows asked for at a time (the API's max_page_size is 500)


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


def logout(args) -> int:
    """The stored token is forgotten here (the URL and user name stay, for the next login).
    The API offers no way to revoke a token: the server keeps accepting it."""
    stored = load_credentials()
    url = stored.get("url") or os.environ.get("GRIDWMS_URL") or DEFAULT_URL
    if stored.get("token"):
        path = save_credentials({k: v for k, v in stored.items() if k != "token"})
        print(f"logged out of {url}: the token is removed from {path}")
    else:
        print(f"not logged in to {url}: no token stored in {config_path()}")
    if os.environ.get("GRIDWMS_TOKEN"):
        say("warning: GRIDWMS_TOKEN is still set: commands keep sending it")
    return 0


def whoami(args) -> int:
    client = connect()
    me = client.call("GET", "/users/me/") or {}
    if args.json:
        print_json({"url": client.base, **me})
        return 0
    staff = " (staff)" if me.get("is_staff") else ""
    print(f"{me.get('username')}{staff} at {client.base}")
    print(f"  groups: {', '.join(me.get('groups') or []) or '(none)'}")
    if me.get("dn"):
        print(f"  DN: {me['dn']}")
    source = "GRIDWMS_TOKEN" if os.environ.get("GRIDWMS_TOKEN") else str(config_path())
    print(f"  token from: {source}")
    return 0


# --- status, jobs --------------------------------------------------------------------------------


def status(args) -> int:
    client = connect()
    if args.group is not None or not args.ids:
        return _group_status(client, args)
    found, missing = [], []
    for job in dict.fromkeys(args.ids):
        try:
            found.append(client.call("GET", f"/jobs/{job}/"))
        except CliError as exc:
            if exc.code != EXIT_USAGE:
                raise
            missing.append(f"job {job}: {exc.message}")
    if args.json:
        print_json(found)
    elif found:
        print_table(found, watch.waiting_reasons(client, found))
    for message in missing:
        say(message)
    return EXIT_USAGE if missing else 0


def _group_status(client: Client, args) -> int:
    ids, _ = watch.job_ids(client, args)
    found, missing = groups.fetch(client, ids)
    if args.json:
        print_json(found)
        return EXIT_USAGE if missing else 0
    group = groups.load(args.group, client.base)
    print(
        f"group {group['group']}: {len(ids)} job{'s' if len(ids) > 1 else ''}, submitted "
        f"{when(group.get('submitted'))}: {count_states(found)}"
        + (f", {len(missing)} not found" if missing else "")
    )
    if found and not args.brief:
        print_table(found, watch.waiting_reasons(client, found))
    if missing:
        say(f"not found (purged, or not yours): job {', '.join(map(str, missing))}")
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


# --- kill, reschedule ----------------------------------------------------------------------------


def kill(args) -> int:
    return _act(args, "kill", "killed")


def reschedule(args) -> int:
    return _act(args, "reschedule", "rescheduled")


def _act(args, action: str, done: str) -> int:
    client = connect()
    if args.group is not None:
        return _act_on_group(client, args, action, done)
    if not args.ids:
        raise CliError("which jobs? give their ids, or --group (the last submission)")
    refused = 0
    for job in args.ids:
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


# What each action leaves alone in a group: a kill, the jobs that ended; a reschedule, all
# but the failed ones (the only state a user sends back).
LEFT_ALONE = {
    "kill": lambda state: state in watch.FINAL_STATES,
    "reschedule": lambda state: state != "failed",
}


def _act_on_group(client: Client, args, action: str, done: str) -> int:
    ids, label = watch.job_ids(client, args)
    found, missing = groups.fetch(client, ids)
    skip = LEFT_ALONE[action]
    wanted = [job["id"] for job in found if not skip(job.get("status"))]
    left = [job for job in found if skip(job.get("status"))]
    acted, refused = groups.act(client, action, wanted) if wanted else ([], {})
    line = f"{len(acted)} of {len(ids)} jobs{label} {done}"
    if left:
        line += f"; left alone: {count_states(left)}"
    print(line)
    for job, reason in sorted(refused.items()):
        say(f"job {job}: {reason}")
    if missing:
        say(f"not found (purged, or not yours): job {', '.join(map(str, missing))}")
    return EXIT_USAGE if refused or missing else 0


# --- groups --------------------------------------------------------------------------------------


def list_groups(args) -> int:
    """The groups recorded here, for every server (the newest last)."""
    recorded = groups.recorded()
    if args.json:
        print_json(recorded)
        return 0
    if not recorded:
        say(f"no groups recorded in {groups.groups_dir()}")
        return 0
    for group in recorded[-args.limit :] if args.limit else recorded:
        jobs = group["jobs"]
        span = f"{jobs[0]}" if len(jobs) == 1 else f"{min(jobs)}-{max(jobs)}"
        count = f"{len(jobs)} job{'' if len(jobs) == 1 else 's'}"
        print(
            f"{group['group']:>4}  {when(group.get('submitted')):<12}  {count:>10} ({span})  "
            f"{group.get('what') or ''}  {group.get('url')}"
        )
    return 0
