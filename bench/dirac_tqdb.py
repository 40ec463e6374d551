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

Then:

    .venv/bin/python bench/match.py --shape many-small --scale full --dump-world /tmp/world.json
    /path/to/dirac-venv/bin/python bench/dirac_tqdb.py /tmp/world.json

It creates a throw-away MariaDB database and user, a DIRAC configuration naming them (the
groups' JobShares and JobSharing, our CPU segments), inserts every job with
TaskQueueDB.insertJob (which makes the same TaskQueues; with --load fast, the default, only
each TaskQueue's first job, the others as the rows insertJob would add), sets each TaskQueue's
priority to ours, then times 1,000 serial TaskQueueDB.matchAndGetJob calls over the same twenty
resource descriptions, each taking a job, after one untimed call per resource. Prints JSON lines
match_p50_ms, match_p99_ms, matches_per_s with "engine": "dirac".
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time

DB, USER = f"dirac_tqdb_{os.getpid()}", f"dirac_{os.getpid()}"


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
    parser.add_argument("world")
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
        run(world, password, args.load)
    finally:
        admin([f"DROP DATABASE {DB}", f"DROP USER '{USER}'@'localhost'"], args.socket)


def run(world: dict, password: str, load: str) -> None:
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


if __name__ == "__main__":
    main()
