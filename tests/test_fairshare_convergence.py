"""Fair share end to end, shortened and deterministic: bench/fairshare.py's headless
grid (the real director, simulated CEs, matching, usage sampling, corrector and priorities on
the simulated clock, moved by the script) on a small grid with a fixed seed. The achieved
running-slot-time share of every entity lands within a tolerance of its expected share. No
wall-clock assertion: the clock is simulated, the random numbers seeded."""

import argparse
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
# The benchmark's target at full scale is 2 points; 6 hours of 200 slots are noisier. Before
# the director shared the CEs' waiting slots by lambda, lhcb_data was 15 points short here.
# The run is seeded but not the same in every process: somewhere a set of names is iterated,
# and its order follows the process's string hashing (PYTHONHASHSEED=1 gives lhcb_data 4.95
# points, =2 under 4, a CI worker 4.4), so the tolerance covers that spread.
TOLERANCE_PP = 6.0


@pytest.fixture
def fairshare(settings, monkeypatch):
    """The benchmark's module, on the test database, its clock the shared simulated one."""
    settings.SIMULATED_CLOCK = True
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setenv("GRIDWMS_SIMULATED_CLOCK", "1")  # the module sets it: restored after
    import fairshare as module

    yield module
    sys.modules.pop("fairshare", None)


def _run(module, tmp_path, capsys, **over) -> dict:
    args = argparse.Namespace(
        scale="small",
        days=0.5,
        step_minutes=4.0,  # the cycles due at most every 4 simulated minutes: CI's time
        seed=15,
        chart=str(tmp_path / "fairshare.html"),
        progress=False,
        # The seed's four CPU segments put 100,000 s jobs in the 300,000 s one, above most CEs'
        # limits: they pile up at two CEs while the others run dry of that group's work (the
        # benchmark's main remaining gap). Finer segments, as DIRAC later used, let them run.
        # And the demo's matching and director (simulation.demo.living_grid_parameters): with the
        # seed's CPU-segment precedence and pilotsPerJob term this half day ends 4.4 points off
        # (2.6 with the seed's director cap too; 2-minute steps); without them, 2.2.
        param=[
            "CPUSegments=[500,5000,50000,100000,200000,300000]",
            "MatchCPUSegmentPrecedence=false",
            "PilotsPerJobTerm=false",
        ],
        slots=None,
        cpu_scale=None,
    )
    for k, v in over.items():
        setattr(args, k, v)
    module.run(args)
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    return {
        "summary": next(x for x in lines if x["kind"] == "summary"),
        "entities": {x["entity"]: x for x in lines if x["kind"] == "entity"},
    }


@pytest.mark.django_db(transaction=True)
def test_every_entity_converges_to_its_share_on_a_small_simulated_grid(fairshare, tmp_path, capsys):
    out = _run(fairshare, tmp_path, capsys)
    summary, entities = out["summary"], out["entities"]
    assert summary["failed_cycles"] == {}
    assert summary["mean_running_in_window"] > 0.9 * summary["slots"]  # the grid is busy
    judged = [e for e in entities.values() if e["servable_waiting_exceeds_share"]]
    assert {e["entity"] for e in judged} >= {"lhcb_data", "lhcb_user:alice"}
    for e in judged:
        assert abs(e["gap_pp"]) <= TOLERANCE_PP, e
    assert summary["wasted_pilot_fraction"] <= 0.10
