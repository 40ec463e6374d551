"""DIRAC's own TaskQueueDB on the very same world, for the side-by-side table of the matchers.

Not part of the project or its tests: it runs in a virtualenv of its own with DIRAC installed
(DIRAC 9.1.22 from PyPI, `mysqlclient`, and the few packages the TaskQueueDB imports), against
a local MariaDB, on a world written by bench/match.py. A plain `pip install DIRAC` pulls in
requirements that do not build here (gfal2-python); what the TaskQueueDB needs is:

    apt-get install -y libmariadb-dev swig
    python3 -m venv /tmp/dirac-venv
    /tmp/dirac-venv/bin/pip install --no-deps DIRAC==9.1.22
    /tmp/dirac-venv/bin/pip install DIRACCommon==9.1.22 diraccfg mysqlclient M2Crypto \
        diracx-core diracx-client importlib_metadata importlib_resources cachetools requests \
        psutil pyasn1 pyasn1_modules

Then, both matchers on one shape's world in one run (`--shape`: bench/match.py builds the
world with the project's own interpreter, times gridwms's serial matches on it and writes it
out; this script then times DIRAC's on the same world):

    /path/to/dirac-venv/bin/python bench/dirac_tqdb.py --shape tq100 --scale full
    # also tq1000, tq4000, many-small

or the two steps by hand:

    .venv/bin/python bench/match.py --shape many-small --scale full --dump-world /tmp/world.json
    /path/to/dirac-venv/bin/python bench/dirac_tqdb.py /tmp/world.json

It creates a throw-away MariaDB database and user, a DIRAC configuration naming them (the
groups' JobShares and JobSharing, our CPU segments), inserts every job with
TaskQueueDB.insertJob (which makes the same TaskQueues; with --load fast, the default, only
each TaskQueue's first job, the others as the rows insertJob would add), sets each TaskQueue's
priority to ours, then times 1,000 serial TaskQueueDB.matchAndGetJob calls over the same twenty
resource descriptions, each taking a job, after one untimed call per resource. Prints JSON lines
match_p50_ms, match_p99_ms, matches_per_s with "engine": "dirac"; with --shape, also gridwms's
lines (bench/match.py's, "engine": "gridwms") and `dirac_over_gridwms_p50`, DIRAC's p50 over
ours in the same run (target: at least 10).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DB, USER = f"dirac_tqdb_{os.getpid()}", f"dirac_{os.getpid()}"
ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("tq100", "tq1000", "tq4000", "many-small")
TARGET_RATIO = 10


def emit(metric: str, value: float, unit: str, **context) -> None:
    print(json.dumps({"metric": metric, "value": round(value, 3), "unit": unit, **context}))
    sys.stdout.flush()


def percentile(values, q):
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


def admin(sql: list[str], socket: str) -> None:
    import MySQLdb

    con = MySQLdb.connect(user="root", unix_socket=socket)
    cur = con.cursor()
    for statement in sql:
        cur.execute(statement)
    con.commit()
    con.close()


def configuration(world: dict, password: str) -> str:
    users = sorted({tq["owner"] for tq in world["taskqueues"]})
    groups = []
    for name, g in world["groups"].items():
        props = "JobSharing, NormalUser" if g["sharing"] else "NormalUser"
        members = sorted({tq["owner"] for tq in world["taskqueues"] if tq["group"] == name})
        groups.append(
            f"    {name}\n    {{\n      Users = {', '.join(members) or 'nobody'}\n"
            f"      Properties = {props}\n      JobShare = {g['share']}\n      VO = lhcb\n    }}"
        )
    user_lines = "\n".join(
        f"    {u}\n    {{\n      DN = /DC=ch/DC=cern/OU=Users/CN={u}\n    }}" for u in users
    )
    segments = ", ".join(str(s) for s in world["cpu_segments"])
    return f"""
DIRAC
{{
  Setup = Bench
}}
Systems
{{
  Databases
  {{
    User = {USER}
    Password = {password}
    Host = localhost
    Port = 3306
  }}
  WorkloadManagement
  {{
    Databases
    {{
      TaskQueueDB
      {{
        DBName = {DB}
      }}
    }}
  }}
}}
Operations
{{
  Defaults
  {{
    JobScheduling
    {{
      taskQueueCPUTimeIntervals = {segments}
    }}
  }}
}}
Registry
{{
  DefaultGroup = lhcb_user
  VO
  {{
    lhcb
    {{
      VOAdmin = nobody
    }}
  }}
  Users
  {{
{user_lines}
    nobody
    {{
      DN = /DC=ch/DC=cern/OU=Users/CN=nobody
    }}
  }}
  Groups
  {{
{chr(10).join(groups)}
  }}
}}
"""


def match_dict(r: dict) -> dict:
    return {
        "Site": r["site"],
        "GridCE": r["grid_ce"],
        "CPUTime": r["cpu_time"],
        "Platform": r["platforms"],
        "Tag": r["tags"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("world", nargs="?", help="a world written by bench/match.py --dump-world")
    parser.add_argument("--shape", choices=SHAPES, help="build this shape's world and time both")
    parser.add_argument("--scale", choices=["small", "full"], default="full")
    parser.add_argument(
        "--project-python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="the interpreter that runs bench/match.py (the project's virtualenv)",
    )
    parser.add_argument("--socket", default="/run/mysqld/mysqld.sock")
    parser.add_argument(
        "--load",
        choices=["fast", "each"],
        default="fast",
        help="fast: insertJob for each TaskQueue's first job (it creates the TaskQueue and "
        "recalculates the shares), the rest as the very rows insertJob writes into an existing "
        "TaskQueue, 1,000 per statement; each: insertJob for every job (~40 ms a job)",
    )
    args = parser.parse_args()
    if (args.world is None) == (args.shape is None):
        parser.error("give a world file or --shape, not both")
    ours = None
    if args.shape:
        world_file = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        try:
            ours = gridwms_run(args, world_file)
            with open(world_file) as f:
                world = json.load(f)
        finally:
            os.unlink(world_file)
    else:
        with open(args.world) as f:
            world = json.load(f)
    password = secrets.token_hex(12)
    admin(
        [
            f"CREATE DATABASE {DB}",
            f"CREATE USER '{USER}'@'localhost' IDENTIFIED BY '{password}'",
            f"GRANT ALL ON {DB}.* TO '{USER}'@'localhost'",
        ],
        args.socket,
    )
    try:
        dirac_p50 = run(world, password, args.load)
    finally:
        admin([f"DROP DATABASE {DB}", f"DROP USER '{USER}'@'localhost'"], args.socket)
    if ours is not None:
        emit(
            "dirac_over_gridwms_p50",
            dirac_p50 / ours["value"],
            "x",
            target=f">= {TARGET_RATIO}",
            dirac_p50_ms=round(dirac_p50, 3),
            gridwms_p50_ms=ours["value"],
            shape=args.shape,
            scale=args.scale,
            loadavg_1m=round(os.getloadavg()[0], 2),
        )


def gridwms_run(args, world_file: str) -> dict:
    """bench/match.py on the shape: it builds the world, times gridwms's serial matches, writes
    the world out; its JSON lines are passed on marked "engine": "gridwms". Its match_p50_ms."""
    argv = [args.project_python, str(ROOT / "bench" / "match.py"), "--shape", args.shape]
    argv += ["--scale", args.scale, "--dump-world", world_file]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    p50 = None
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = {**json.loads(line), "engine": "gridwms"}
        print(json.dumps(row))
        if row["metric"] == "match_p50_ms":
            p50 = row
    sys.stdout.flush()
    if p50 is None:
        raise SystemExit(f"bench/match.py printed no match_p50_ms (exit {done.returncode})")
    if done.returncode:  # the figures are in; say that something after them failed
        print(f"[dirac_tqdb] bench/match.py exited {done.returncode}", file=sys.stderr)
    return p50


def run(world: dict, password: str, load: str) -> float:
    """DIRAC's TaskQueueDB on the world; its p50 in ms."""
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as cfg:
        cfg.write(configuration(world, password))
    os.environ["DIRACSYSCONFIG"] = cfg.name
    import DIRAC

    DIRAC.initialize(require_auth=False, log_level="ERROR")
    from DIRAC.WorkloadManagementSystem.DB.TaskQueueDB import TaskQueueDB

    tqdb = TaskQueueDB()
    os.unlink(cfg.name)  # read by now; it holds the throw-away user's password
    started = time.perf_counter()
    jobs = 0
    for tq in world["taskqueues"]:
        definition = {
            "Owner": tq["owner"],
            "OwnerGroup": tq["group"],
            "CPUTime": tq["cpu_time"],
            "Sites": tq["sites"],
            "BannedSites": tq["banned_sites"],
            "GridCEs": tq["grid_ces"],
            "Platforms": tq["platforms"],
            "Tags": tq["tags"],
        }
        definition = {k: v for k, v in definition.items() if v != []}
        one_by_one = tq["jobs"] if load == "each" else tq["jobs"][:1]
        for job_id, prio in one_by_one:
            result = tqdb.insertJob(job_id, definition, prio)
            if not result["OK"]:
                raise SystemExit(f"insertJob {job_id}: {result['Message']}")
            jobs += 1
        if tq["jobs"]:
            first = tqdb.getTaskQueueForJob(tq["jobs"][0][0])["Value"]
            rest = tq["jobs"][len(one_by_one) :]
            if len(tq["jobs"]) > 5000:  # DIRAC's __maxJobsInTQ: it would open a second TaskQueue
                raise SystemExit(f"a TaskQueue of {len(tq['jobs'])} jobs: use --load each")
            for at in range(0, len(rest), 1000):
                rows = [
                    (first, job_id, prio, tqdb._TaskQueueDB__hackJobPriority(prio))
                    for job_id, prio in rest[at : at + 1000]
                ]
                result = tqdb._update(
                    "INSERT INTO tq_Jobs (TQId, JobId, Priority, RealPriority) VALUES "
                    + ",".join(["(%s,%s,%s,%s)"] * len(rows)),
                    args=tuple(v for row in rows for v in row),
                )
                if not result["OK"]:
                    raise SystemExit(f"tq_Jobs: {result['Message']}")
                jobs += len(rows)
            tqdb._update(
                "UPDATE tq_TaskQueues SET Priority = %s WHERE TQId = %s",
                args=(tq["priority"], first),
            )
    loaded = time.perf_counter() - started
    count = tqdb._query("SELECT COUNT(*) FROM tq_TaskQueues")["Value"][0][0]
    print(f"[dirac_tqdb] {jobs} jobs in {count} TaskQueues in {loaded:.1f} s", file=sys.stderr)
    pool = [match_dict(r) for r in world["resources"]]
    for r in pool:
        tqdb.matchAndGetJob(r)
    times, found = [], 0
    t0 = time.perf_counter()
    for i in range(world["serial"]):
        s = time.perf_counter()
        result = tqdb.matchAndGetJob(pool[i % len(pool)])
        times.append((time.perf_counter() - s) * 1000)
        if not result["OK"]:
            raise SystemExit(f"matchAndGetJob: {result['Message']}")
        found += bool(result["Value"].get("matchFound"))
    elapsed = time.perf_counter() - t0
    context = {"engine": "dirac", "jobs": jobs, "taskqueues": count, "no_job": len(times) - found}
    p50, p99 = statistics.median(times), percentile(times, 99)
    emit("match_p50_ms", p50, "ms", p99_ms=round(p99, 3), **context)
    emit("match_p99_ms", p99, "ms", p50_ms=round(p50, 3), **context)
    emit("matches_per_s", len(times) / elapsed, "matches/s", **context)
    # DIRAC drops emptied TaskQueues 300 s later, or at exit: now, before the database goes.
    tqdb._TaskQueueDB__deleteTQWithDelay.purgeAll()
    return p50


if __name__ == "__main__":
    main()
