"""`gridwms`: the user's command line over the REST API, with the standard library only.

    gridwms login [--url URL] [--user NAME] [--password-stdin]
    gridwms submit FILE [--sandbox FILE ...] [--json]   (a JSON job or list of jobs, or a JDL)
    gridwms status ID [ID ...] [--json]
    gridwms jobs [--status S] [--site S] [--owner U] [--name TEXT] [--limit N] [--json]
    gridwms log ID [--stderr] [--tail N] [--follow]
    gridwms get ID [--dir D]
    gridwms kill ID [ID ...]
    gridwms reschedule ID [ID ...]

The token is kept in ~/.config/gridwms/credentials.json (mode 0600; GRIDWMS_CONFIG names another
file); GRIDWMS_URL and GRIDWMS_TOKEN override what it holds. Exit status: 0 done, 1 the server
failed or could not be reached, 2 bad usage or a request the server refused (4xx).

It imports nothing of the project and not Django (tests/test_cli.py checks): it runs wherever
the package is installed, the entry point `gridwms` (pyproject.toml).
"""

from __future__ import annotations

import argparse
import os
import sys

from gridwms.cli import files, jobs
from gridwms.cli.client import DEFAULT_URL, EXIT_SERVER, EXIT_USAGE, VERSION, CliError

EPILOG = f"""\
environment: GRIDWMS_URL (default {DEFAULT_URL}), GRIDWMS_TOKEN, GRIDWMS_CONFIG (the
credentials file, default ~/.config/gridwms/credentials.json).
exit status: 0 done, 1 server or network error, 2 bad usage or refused by the server (4xx)."""


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"not a number of seconds in [0.05, 3600]: {text!r}")
    return value


def _commands(sub) -> None:
    p = sub.add_parser("login", help="get a token and store it")
    p.add_argument("--url", help=f"the server (default: GRIDWMS_URL, the last one, {DEFAULT_URL})")
    p.add_argument("--user", help="your user name (asked for when left out)")
    p.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    p.set_defaults(func=jobs.login)

    p = sub.add_parser("submit", help="submit a JSON job (or a list) or a DIRAC JDL")
    p.add_argument("file", metavar="FILE", help="a .json or .jdl file ('-': standard input)")
    p.add_argument(
        "--sandbox", nargs="+", action="extend", metavar="FILE", help="input sandbox files"
    )
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    p.set_defaults(func=jobs.submit)

    p = sub.add_parser("status", help="show jobs by id")
    p.add_argument("ids", nargs="+", type=_positive, metavar="ID")
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")
    p.set_defaults(func=jobs.status)

    p = sub.add_parser("jobs", help="list your jobs (newest first)")
    p.add_argument("--status", action="append", help="a status (repeatable, or a,b,c)")
    p.add_argument("--site", help="matched at this site, or asking for it")
    p.add_argument("--owner", help="the owner's user name (what you may see of others')")
    p.add_argument("--name", help="the job's name contains this (any case)")
    p.add_argument("--limit", type=_count, default=50, help="at most N jobs (0: all; 50)")
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")
    p.set_defaults(func=jobs.jobs)

    p = sub.add_parser("log", help="print a job's standard output (or error)")
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--stderr", action="store_true", help="the standard error instead")
    p.add_argument("--tail", type=_positive, metavar="N", help="the last N lines only")
    p.add_argument("--follow", "-f", action="store_true", help="until the job ends")
    p.add_argument("--interval", type=_seconds, default=2.0, help=argparse.SUPPRESS)
    p.set_defaults(func=files.log)

    p = sub.add_parser("get", help="download a job's output sandbox")
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--dir", metavar="D", help="into this directory (default: ./job_<ID>/)")
    p.set_defaults(func=files.get)

    for name, func, what in (
        ("kill", jobs.kill, "kill jobs"),
        ("reschedule", jobs.reschedule, "send failed jobs back to their TaskQueue"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("ids", nargs="+", type=_positive, metavar="ID")
        p.set_defaults(func=func)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gridwms",
        description="The gridwms command line: submit jobs and follow them over the REST API.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gridwms {VERSION}")
    _commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except CliError as exc:
        jobs.say(exc.message)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gridwms jobs | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SERVER
    except OSError as exc:  # a local file: the directory of `get`, say
        jobs.say(f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}")
        return EXIT_USAGE
    except Exception as exc:
        if os.environ.get("GRIDWMS_DEBUG"):
            raise
        jobs.say(f"unexpected error ({type(exc).__name__}: {exc}); GRIDWMS_DEBUG=1 shows where")
        return EXIT_SERVER
