"""How a simulated job fails, and what its pilot logs: an error drawn from a realistic table
(PanDA pilot error codes, matcher.errors, weighted roughly as a production grid sees them:
stage-in and payload failures most often), with the exit code the payload would have had, and
the few log lines the pilot would have written. Pure: an injected random.Random draws."""

from __future__ import annotations

import random
from dataclasses import dataclass

from matcher import errors


@dataclass(frozen=True)
class SimulatedFailure:
    code: int
    weight: float
    exit_code: int | None  # None: the payload's end was never heard of
    lines: tuple[str, ...]  # {job}, {host}, {site}, {file}, {mb}, {limit} filled in


FAILURES = (
    SimulatedFailure(
        1099,
        20,
        1,
        (
            "stage-in: copying {file} from {site}_DATADISK",
            "rucio: the transfer of {file} failed: Connection timed out (SRM_FAILURE)",
            "stage-in failed after 3 attempts: giving up",
        ),
    ),
    SimulatedFailure(
        1151,
        6,
        1,
        (
            "stage-in: copying {file} from {site}_DATADISK",
            "xrdcp: no progress for 600 s, the transfer is killed",
        ),
    ),
    SimulatedFailure(
        1305,
        22,
        65,
        (
            "payload: setting up the release",
            "payload: ERROR  Athena crashed: 'ValueError: bad event record'",
            "payload: exited with code 65",
        ),
    ),
    SimulatedFailure(
        1203,
        5,
        139,
        (
            "payload: *** Break *** segmentation violation",
            "payload: killed by signal SIGSEGV (exit code 139)",
        ),
    ),
    SimulatedFailure(
        1212,
        10,
        137,
        (
            "memory monitor: PSS {mb} MB over the queue's limit of {limit} MB",
            "payload ran out of memory: the kernel's OOM killer sent SIGKILL",
        ),
    ),
    SimulatedFailure(
        1213,
        9,
        143,
        (
            "the batch system announced the end of the slot (SIGTERM)",
            "payload stopped: maximum batch queue time reached on {host}",
        ),
    ),
    SimulatedFailure(
        1137,
        8,
        0,
        (
            "payload finished with exit code 0",
            "stage-out: copying {file}.out to {site}_SCRATCHDISK",
            "stage-out failed: Permission denied (gfal-copy)",
        ),
    ),
    SimulatedFailure(
        1098,
        4,
        1,
        (
            "workdir: {mb} MB free on {host}, the job needs more",
            "not enough local space: job ended",
        ),
    ),
    SimulatedFailure(
        1186,
        3,
        1,
        ("setup: /cvmfs/atlas.cern.ch/repo/sw not mounted on {host}", "no software directory"),
    ),
    SimulatedFailure(
        errors.LOST_HEARTBEAT_CODE,
        8,
        None,
        ("heartbeat: no answer from the server", "the pilot went silent: lost heartbeat"),
    ),
)


def draw(rng: random.Random) -> SimulatedFailure:
    """One failure, in proportion to the weights."""
    return rng.choices(FAILURES, weights=[f.weight for f in FAILURES])[0]


def log_lines(failure: SimulatedFailure, job_id: int, host: str, site: str, mb: int) -> list[str]:
    """The pilot's lines for this failure of job `job_id`, its values filled in."""
    values = {
        "job": job_id,
        "host": host,
        "site": site.split(".")[1] if site.count(".") >= 2 else site,
        "file": f"EVNT.{job_id:08d}._000001.pool.root.1",
        "mb": mb,
        "limit": max(1000, mb - mb // 5),
    }
    return [line.format(**values) for line in failure.lines]


def worker_node(rng: random.Random, ce: str) -> tuple[str, dict[str, int | str]]:
    """A worker node behind the CE: its host name in the CE's domain, and its description."""
    domain = ce.split(".", 1)[1] if "." in ce else (ce or "grid")
    cores = rng.choice((8, 16, 32, 64))
    node = {
        "cores": cores,
        "memory_mb": cores * 2000,
        "os": rng.choice(("el9", "el9", "el8")),
        "cpu": rng.choice(("AMD EPYC 7302", "Intel Xeon Gold 6130", "AMD EPYC 9654")),
        "pilot_version": "simulated 3.9",
    }
    return f"wn{rng.randrange(1, 900):03d}.{domain}", node
