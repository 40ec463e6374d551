"""`gridwms`: the user's command line over the REST API, with the standard library only.

    gridwms login [--url URL] [--user NAME] [--password-stdin]
    gridwms logout | whoami [--json]
    gridwms submit [FILE] [--count N] [--cores N] [--memory GB] [--sandbox FILE ...]
                   [--site S] [--cpu-time S] [--name NAME] [--json] [-- COMMAND ARG...]
    gridwms status ID [ID ...] | --group [G]   [--json]
    gridwms jobs [--status S] [--site S] [--owner U] [--name TEXT] [--limit N] [--json]
    gridwms wait ID [ID ...] | --group [G]   [--timeout 30m]
    gridwms why ID
    gridwms log ID [--stderr] [--tail N] [--follow]
    gridwms get ID [--dir D]
    gridwms kill | reschedule  ID [ID ...] | --group [G]
    gridwms groups
    gridwms task submit [FILE] --name NAME [--group G] [--jobs N] [--sandbox FILE ...]
                        [--output NAME ...] [--env NAME=VALUE ...] [-- COMMAND ARG...]
    gridwms task list [--status S] [--limit N] [--json] | show ID [--json] | retry ID | kill ID

The token is kept in ~/.config/gridwms/credentials.json (mode 0600; GRIDWMS_CONFIG names another
file), each submission's job ids in groups/ beside it; GRIDWMS_URL and GRIDWMS_TOKEN override
what it holds. Exit status: 0 done, 1 the server failed or could not be reached, 2 bad usage or a
request the server refused (4xx); `wait`: 3 some job ended other than finished, 4 timed out.

It imports nothing of the project and not Django (tests/test_cli.py checks): it runs wherever
the package is installed, the entry point `gridwms` (pyproject.toml).
"""

from __future__ import annotations

import argparse
import os
import sys

from gridwms.cli import files, jobs, submit, tasks, watch
from gridwms.cli.client import DEFAULT_URL, EXIT_SERVER, EXIT_USAGE, VERSION, CliError
from gridwms.cli.groups import LAST

EPILOG = f"""\
environment: GRIDWMS_URL (default {DEFAULT_URL}), GRIDWMS_TOKEN, GRIDWMS_CONFIG (the
credentials file, default ~/.config/gridwms/credentials.json).
exit status: 0 done, 1 server or network error, 2 bad usage or refused by the server (4xx);
`wait`: 3 a job ended other than finished, 4 the timeout came first.
`gridwms COMMAND --help` shows each command's options and an example."""


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


def _timeout(text: str) -> float:
    """'90' or '90s', '30m', '2h', '1d': seconds."""
    units = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
    number = text.rstrip("smindh")
    unit = text[len(number) :] or "s"
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        value = -1.0
    if not 0 <= value < float("inf"):  # NaN too
        raise argparse.ArgumentTypeError(f"not a duration (90, 90s, 30m, 2h, 1d): {text!r}")
    return value


def _command(sub, name: str, func, what: str, example: str) -> argparse.ArgumentParser:
    """A command with its one-line help and, below its options, an example."""
    p = sub.add_parser(
        name,
        help=what,
        description=what[0].upper() + what[1:] + ".",
        epilog="example:\n" + example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=func)
    return p


def _group_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--group",
        nargs="?",
        const=LAST,
        metavar="G",
        help="the jobs of submission G (`gridwms groups`); alone: the last submission",
    )


def _commands(sub) -> None:
    p = _command(
        sub,
        "login",
        jobs.login,
        "get a token and store it",
        """\
  gridwms login --url https://gridwms.example.org --user alice   # asks for the password
  gridwms login --user alice --password-stdin < ~/.gridwms-password""",
    )
    p.add_argument("--url", help=f"the server (default: GRIDWMS_URL, the last one, {DEFAULT_URL})")
    p.add_argument("--user", help="your user name (asked for when left out)")
    p.add_argument("--password-stdin", action="store_true", help="read the password from stdin")

    _command(
        sub,
        "logout",
        jobs.logout,
        "forget the stored token",
        """\
  gridwms logout        # the server still accepts the token: the API cannot revoke it""",
    )

    p = _command(
        sub,
        "whoami",
        jobs.whoami,
        "who the server takes you for",
        """\
  gridwms whoami        # user name, groups, DN, the server and where the token comes from""",
    )
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")

    p = _command(
        sub,
        "submit",
        submit.submit,
        "submit a job, or N jobs from one description",
        """\
  gridwms submit job.json                    # a JSON job (or a list): prints the id(s)
  gridwms submit job.jdl --sandbox run.sh    # a DIRAC JDL with its input files
  gridwms submit --count 10 --cores 4 --memory 16 --sandbox run.sh -- /bin/sh run.sh {n}
                                             # 10 jobs, run.sh 0 ... run.sh 9; then:
  gridwms status --group                     # the 10 jobs just submitted""",
    )
    p.usage = "gridwms submit [FILE] [options] [-- COMMAND [ARG ...]]"
    p.add_argument(
        "file", nargs="?", metavar="FILE", help="a .json or .jdl file ('-': standard input)"
    )
    p.add_argument(
        "--sandbox", nargs="+", action="extend", metavar="FILE", help="input sandbox files"
    )
    p.add_argument(
        "--count", type=_positive, metavar="N",
        help="N jobs, each with {n} in its arguments, name... replaced by its number",
    )  # fmt: skip
    p.add_argument("--first", type=_count, default=0, metavar="K", help="numbers from K (0)")
    p.add_argument("--cores", type=_positive, metavar="N", help="cores (tags <N>Processors)")
    p.add_argument("--memory", type=_positive, metavar="GB", help="memory (the tag <GB>GB)")
    p.add_argument("--cpu-time", type=_positive, metavar="S", help="CPU seconds (a command: 3600)")
    p.add_argument("--site", action="append", metavar="S", help="may run at S (repeatable)")
    p.add_argument("--name", help="the jobs' name ({n}: each job's number)")
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")

    p = _command(
        sub,
        "status",
        jobs.status,
        "show jobs, and why those waiting wait",
        """\
  gridwms status 3002 3003
  gridwms status --group        # the last submission: a count by state, then its jobs
  gridwms status --group 7 --brief""",
    )
    p.add_argument("ids", nargs="*", type=_positive, metavar="ID")
    _group_option(p)
    p.add_argument("--brief", action="store_true", help="a group's count by state only")
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")

    p = _command(
        sub,
        "jobs",
        jobs.jobs,
        "list your jobs (newest first)",
        """\
  gridwms jobs --status running --site LCG.CERN.ch
  gridwms jobs --status failed,cancelled --name scan --limit 0 --json""",
    )
    p.add_argument("--status", action="append", help="a status (repeatable, or a,b,c)")
    p.add_argument("--site", help="matched at this site, or asking for it")
    p.add_argument("--owner", help="the owner's user name (what you may see of others')")
    p.add_argument("--name", help="the job's name contains this (any case)")
    p.add_argument("--limit", type=_count, default=50, help="at most N jobs (0: all; 50)")
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")

    p = _command(
        sub,
        "wait",
        watch.wait,
        "wait until jobs end",
        """\
  gridwms wait 3002                          # exit 0: finished; 3: failed or cancelled
  gridwms wait --group --timeout 2h && gridwms get 3002
                                             # 4: still not ended after two hours""",
    )
    p.add_argument("ids", nargs="*", type=_positive, metavar="ID")
    _group_option(p)
    p.add_argument("--timeout", type=_timeout, metavar="T", help="give up after T (90s, 30m, 2h)")
    p.add_argument(
        "--interval", type=_seconds, default=10.0, metavar="S", help="seconds between looks (10)"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="only the count at the end")

    p = _command(
        sub,
        "why",
        watch.why,
        "why a job is not running (or where it is)",
        """\
  gridwms why 3002     # which CEs could take it; for the others, the first rule that fails""",
    )
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--json", action="store_true", help="the job and the server's analysis")

    p = _command(
        sub,
        "log",
        files.log,
        "print a job's standard output (or error)",
        """\
  gridwms log 3002 --tail 20
  gridwms log 3002 --stderr --follow         # until the job ends""",
    )
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--stderr", action="store_true", help="the standard error instead")
    p.add_argument("--tail", type=_positive, metavar="N", help="the last N lines only")
    p.add_argument("--follow", "-f", action="store_true", help="until the job ends")
    p.add_argument("--interval", type=_seconds, default=2.0, help=argparse.SUPPRESS)

    p = _command(
        sub,
        "get",
        files.get,
        "download a job's output sandbox",
        """\
  gridwms get 3002                 # into ./job_3002/
  gridwms get 3002 --dir results/3002""",
    )
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--dir", metavar="D", help="into this directory (default: ./job_<ID>/)")

    for name, func, what, example in (
        ("kill", jobs.kill, "kill jobs", """\
  gridwms kill 3002 3003
  gridwms kill --group          # every job of the last submission not ended yet"""),
        ("reschedule", jobs.reschedule, "send failed jobs back to their TaskQueue", """\
  gridwms reschedule 3003
  gridwms reschedule --group 7  # the failed jobs of submission 7"""),
    ):  # fmt: skip
        p = _command(sub, name, func, what, example)
        p.add_argument("ids", nargs="*", type=_positive, metavar="ID")
        _group_option(p)

    p = _command(
        sub,
        "groups",
        jobs.list_groups,
        "list the submissions recorded here",
        """\
  gridwms groups                # number, when, how many jobs, their ids, what was submitted""",
    )
    p.add_argument("--limit", type=_count, default=20, help="the last N (0: all; 20)")
    p.add_argument("--json", action="store_true", help="print the records as JSON")


def _task_commands(sub) -> None:
    task = sub.add_parser(
        "task",
        help="PanDA-style tasks: N jobs running one payload",
        description="Tasks: N jobs running one payload, brokered to queues, followed as one.",
        epilog="example:\n  gridwms task submit --name scan --jobs 3 -- /bin/echo part %RNDM:1\n"
        "  gridwms task show 12",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    task.set_defaults(func=lambda args: _usage(task))
    inner = task.add_subparsers(dest="task_command", metavar="COMMAND")

    p = _command(
        inner,
        "submit",
        tasks.submit,
        "submit a task: N jobs running one command (see the example)",
        """\
  gridwms task submit --name scan --jobs 3 --output out_%RNDM:1.txt \\
      -- /bin/sh -c 'echo part %RNDM:1 > out_%RNDM:1.txt'
                                 # 3 jobs, writing out_1.txt, out_2.txt, out_3.txt
  gridwms task submit task.json --sandbox run.sh -- /bin/sh run.sh %RNDM:100""",
    )
    p.usage = "gridwms task submit [FILE] [options] [-- COMMAND [ARG ...]]"
    p.add_argument("file", nargs="?", metavar="FILE", help="a task as JSON (the API's fields)")
    p.add_argument("--name", help="the task's name")
    p.add_argument("--group", metavar="G", help="the group it runs under (yours, if one)")
    p.add_argument("--kind", choices=["analysis", "production"], help="(default analysis)")
    p.add_argument("--jobs", type=_positive, metavar="N", help="how many jobs (1)")
    p.add_argument(
        "--cpu-time", type=_positive, metavar="S", help="CPU seconds per job (with a command: 300)"
    )
    p.add_argument("--site", metavar="Q", help="PanDA queues, commas (default: real pilots')")
    p.add_argument(
        "--sandbox", nargs="+", action="extend", metavar="FILE", help="input files of each job"
    )
    p.add_argument("--output", action="append", metavar="NAME", help="a file each job returns")
    p.add_argument("--env", action="append", metavar="NAME=VALUE", help="a variable (repeatable)")
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")

    p = _command(
        inner,
        "list",
        tasks.list_tasks,
        "list the tasks you may see (newest first)",
        """\
  gridwms task list --status running,ready
  gridwms task list --limit 0 --json""",
    )
    p.add_argument("--status", action="append", help="a status (repeatable, or a,b,c)")
    p.add_argument("--limit", type=_count, default=50, help="at most N tasks (0: all; 50)")
    p.add_argument("--json", action="store_true", help="print the tasks as JSON")

    p = _command(
        inner,
        "show",
        tasks.show,
        "show a task: its state, jobs, payload and output files",
        """\
  gridwms task show 12          # then `gridwms get JOB` downloads a job's outputs""",
    )
    p.add_argument("id", type=_positive, metavar="ID")
    p.add_argument("--json", action="store_true", help="print the task as JSON")

    for name, func, what, example in (
        ("retry", tasks.retry, "run an ended task's failed and cancelled jobs again", """\
  gridwms task retry 12         # a task that ended finished or failed"""),
        ("kill", tasks.kill, "kill a task: its jobs not ended yet are cancelled", """\
  gridwms task kill 12"""),
    ):  # fmt: skip
        p = _command(inner, name, func, what, example)
        p.add_argument("id", type=_positive, metavar="ID")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gridwms",
        description="The gridwms command line: submit jobs and follow them over the REST API.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gridwms {VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _commands(sub)
    _task_commands(sub)
    return parser


def split_run(argv: list[str]) -> tuple[list[str], list[str]]:
    """`submit ... -- COMMAND ARG...` (and `task submit`): the command to run is everything
    after the first `--` (its own options too), kept from argparse, which would read them as
    submit's."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    words = [w for w in argv[:at] if not w.startswith("-")]
    if words[:1] != ["submit"] and words[:2] != ["task", "submit"]:
        return argv, []
    return argv[:at], argv[at + 1 :]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv, run = split_run(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    args.run = run
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
