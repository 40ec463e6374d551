"""How the launcher starts PanDA's pilot (pilots.panda_launch): its command line and
configuration, and a pilot stopped past its time is ended with everything it started."""

import time
from pathlib import Path

from pilots import panda_launch as launch


def test_the_pilot_is_told_the_servers_host_and_port_and_reads_its_queue_from_its_directory(
    tmp_path,
):
    server = launch.Server("http://127.0.0.1:8123", "key")
    args = launch.command(server, "Q1", tmp_path, 300, "user")
    assert args[args.index("--url") + 1] == "http://127.0.0.1"
    assert args[args.index("--port") + 1] == "8123"
    assert args[args.index("--output-dir") + 1] == str(tmp_path / "out")
    assert args[args.index("--getjobfailures") + 1] == "1"  # one job, or none: it ends
    config = launch.pilot_config(tmp_path, heartbeat=15)
    assert config["Pilot"]["heartbeat"] == "15"
    assert config["Information"]["queuedata_url"] == str(tmp_path / "queuedata.json")
    assert config["Information"]["storages_url"] == str(tmp_path / "cric_ddmendpoints.json")
    env = launch.environment(tmp_path, "panda://ce/1")
    assert env["PILOT_NOKILL"] == "1" and env["PANDA_AUTH_DIR"] == f"{tmp_path}/"
    assert env["HARVESTER_WORKER_ID"] == "panda://ce/1"


def test_the_runner_is_staged_where_the_mv_copytool_looks_for_an_input():
    # <scope>/md5("scope:name")[0:2]/[2:4]/<name>, as the pilot's generic user computes it.
    assert launch.rucio_path("gridwms", "gridwms-run") == "gridwms/77/0b/gridwms-run"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_a_pilot_past_its_timeout_is_ended_with_what_it_started_even_ignoring_sigterm(tmp_path):
    # A "pilot" that ignores SIGTERM, as PanDA's pilot takes minutes to wind down on one.
    script = "trap '' TERM; sleep 300 & echo $! > child; wait"
    process = launch.start(
        ["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"}, tmp_path, tmp_path / "log", None
    )
    deadline = time.monotonic() + 10
    while not (tmp_path / "child").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int((tmp_path / "child").read_text())
    members = launch.descendants(process.pid)
    assert child in members
    launch.wait(process, timeout=0.5)
    deadline = time.monotonic() + 5  # SIGKILL is delivered, not awaited
    while any(_alive(pid) for pid in members) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in members if _alive(pid)] == []
