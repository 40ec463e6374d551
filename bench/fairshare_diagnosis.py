"""bench/fairshare.py's diagnosis lines and chart: why each entity is where it is (unservable
waiting jobs, the director's decisions, pilots that found no job and why, jobs started per pilot
kind and CPU segment, the corrector's factors and clamps, the priorities at the end)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

# Diagnosis buckets: a TaskQueue's waiting jobs when a pilot was sent; minutes it queued.
SIZE_BUCKETS = [(1, "1"), (2, "2"), (5, "3-5"), (20, "6-20"), (10**9, ">20")]
QUEUE_BUCKETS = [(5, "<=5"), (30, "5-30"), (120, "30-120"), (10**9, ">120")]


def diagnose(w, out) -> None:
    """Print the `diagnosis` lines of a finished run; `w` holds the run's world and tallies
    (its TaskQueues, entities, expected shares, window, pilots that ran and found no job)."""
    from core import gdpconfig
    from matcher.models import Job, TaskQueue
    from pilots.models import (
        PILOT_WAITING_STATES,
        DirectorDecision,
        Pilot,
        PilotStatus,
        PilotStatusHistory,
    )
    from shares.models import CorrectionRecord

    tq_info = w.tq_info
    learn_taskqueues = w.learn_taskqueues
    waiting_by_tq = w.waiting_by_tq
    entities = w.entities
    expected = w.expected
    entity_of = w.entity_of
    now0 = w.now0
    window_start = w.window_start
    step = w.step
    ran_ids = w.ran_ids
    no_job_ids = w.no_job_ids
    segments = w.segments
    gname = w.gname
    uname = w.uname
    unservable_series = w.unservable_series
    learn_taskqueues()
    waiting = waiting_by_tq()
    unserv: dict[str, Counter] = defaultdict(Counter)
    serv_slots: dict[str, list] = defaultdict(list)
    for tq_id, n in waiting.items():
        info = tq_info.get(tq_id)
        if info is None:
            continue
        if info["servable"]:
            serv_slots[info["entity"]].append((n, info["slots"]))
        else:
            unserv[info["entity"]][info["why"]] += n
    for e in entities:
        total_w = sum(n for n, _ in serv_slots[e]) + sum(unserv[e].values())
        out(
            "diagnosis",
            what="waiting_jobs_at_end",
            entity=e,
            waiting=total_w,
            no_active_ce_can_serve=dict(unserv[e]),
            servable=sum(n for n, _ in serv_slots[e]),
            mean_slots_able_to_take_a_servable_job=round(
                sum(n * s for n, s in serv_slots[e]) / max(1, sum(n for n, _ in serv_slots[e])),
                0,
            ),
        )

    # The director: pilots and skip reasons per entity and CPU segment, last day and all run.
    last_day_start = now0 + window_start * step
    for label, qs in (
        ("director_all_run", DirectorDecision.objects.all()),
        ("director_judged_window", DirectorDecision.objects.filter(at__gte=last_day_start)),
    ):
        per: dict[str, dict] = {}
        # Where each decision came in its cycle's order (rows are written in decision order):
        # the CEs' free waiting slots go to the batches handed over first.
        rows = list(
            qs.order_by("cycle_run", "pk").values_list(
                "cycle_run",
                "task_queue_id",
                "cpu_time",
                "lam",
                "drawn",
                "submitted",
                "private",
                "skipped",
            )
        )
        size = Counter(r[0] for r in rows)
        seen: Counter = Counter()
        position: dict[str, list] = defaultdict(list)
        for run_id, tq_id, *_ in rows:
            info = tq_info.get(tq_id)
            position[info["entity"] if info else "?"].append(seen[run_id] / max(1, size[run_id]))
            seen[run_id] += 1
        for _run, tq_id, cpu_seg, lam, drawn, sub, private, skipped in rows:
            info = tq_info.get(tq_id)
            e = info["entity"] if info else "?"
            row = per.setdefault(
                e,
                {
                    "decisions": 0,
                    "lambda": 0.0,
                    "pilots": 0,
                    "private_pilots": 0,
                    "pilots_by_segment": Counter(),
                    "pilots_for_unservable_tqs": 0,
                    "skipped": Counter(),
                },
            )
            row["decisions"] += 1
            row["lambda"] += lam
            row["pilots"] += sub
            row["private_pilots"] += sub if private else 0
            row["pilots_by_segment"][cpu_seg] += sub
            if info and not info["servable"]:
                row["pilots_for_unservable_tqs"] += sub
            if skipped and drawn:
                for note in skipped.split("; "):
                    row["skipped"][re.sub(r"\d+", "N", note)] += 1
        lam_total = sum(r["lambda"] for r in per.values()) or 1.0
        pil_total = sum(r["pilots"] for r in per.values()) or 1
        for e, row in sorted(per.items()):
            out(
                "diagnosis",
                what=label,
                entity=e,
                expected_share=round(expected.get(e, 0.0), 4),
                lambda_share=round(row["lambda"] / lam_total, 4),
                pilot_share=round(row["pilots"] / pil_total, 4),
                decisions=row["decisions"],
                pilots=row["pilots"],
                private_pilots=row["private_pilots"],
                pilots_by_segment=dict(sorted(row["pilots_by_segment"].items())),
                pilots_for_unservable_tqs=row["pilots_for_unservable_tqs"],
                skipped_when_drawn=dict(row["skipped"].most_common(6)),
                mean_position_in_cycle=round(sum(position[e]) / max(1, len(position[e])), 3),
            )

    # Pilots that ran and found no job: by the group of the TaskQueue they were sent for, and
    # private or generic; and the jobs started by kind of pilot and CPU segment.
    ran_by: Counter = Counter()
    nojob_by: Counter = Counter()
    for pk, tq_id, private in Pilot.objects.filter(pk__in=ran_ids).values_list(
        "pk", "task_queue_id", "private"
    ):
        info = tq_info.get(tq_id)
        key = (info["entity"].split(":")[0] if info else "?", "private" if private else "generic")
        ran_by[key] += 1
        if pk in no_job_ids:
            nojob_by[key] += 1
    for key in sorted(ran_by):
        out(
            "diagnosis",
            what="pilots_no_job",
            group_sent_for=key[0],
            pilot=key[1],
            ran=ran_by[key],
            found_no_job=nojob_by[key],
            fraction=round(nojob_by[key] / ran_by[key], 4),
        )
    # The same pilots by the waiting jobs and pilots of their TaskQueue when the director sent
    # them, and by how long they queued at their CE before they ran.
    decided = {
        (tq, run): (jobs, waiting)
        for tq, run, jobs, waiting in DirectorDecision.objects.values_list(
            "task_queue_id", "cycle_run", "jobs", "waiting_pilots"
        )
    }
    ran_at: dict[int, object] = {}
    for pk, at in PilotStatusHistory.objects.filter(
        to_status=PilotStatus.RUNNING, pilot_id__in=ran_ids
    ).values_list("pilot_id", "at"):
        ran_at[pk] = min(at, ran_at.get(pk, at))
    by_size: dict[str, Counter] = defaultdict(Counter)
    by_queue: dict[str, Counter] = defaultdict(Counter)
    for pk, tq_id, run_id, submitted in Pilot.objects.filter(pk__in=ran_ids).values_list(
        "pk", "task_queue_id", "director_run", "submitted"
    ):
        jobs, _ = decided.get((tq_id, run_id), (0, 0))
        size = next(label for top, label in SIZE_BUCKETS if jobs <= top)
        queued = (ran_at[pk] - submitted).total_seconds() / 60 if pk in ran_at else 0
        wait = next(label for top, label in QUEUE_BUCKETS if queued <= top)
        hit = "no_job" if pk in no_job_ids else "ran_jobs"
        by_size[size][hit] += 1
        by_queue[wait][hit] += 1
    for what, table in (
        ("pilots_no_job_by_taskqueue_jobs", by_size),
        ("pilots_no_job_by_minutes_queued", by_queue),
    ):
        out(
            "diagnosis",
            what=what,
            buckets={
                k: {**v, "fraction": round(v["no_job"] / max(1, sum(v.values())), 3)}
                for k, v in table.items()
            },
        )
    started: dict[str, Counter] = defaultdict(Counter)
    pilot_kind = dict(Pilot.objects.values_list("pk", "private"))
    for g, o, cpu_t, pilot_id in (
        Job.objects.filter(pilot_id__isnull=False)
        .values_list("owner_group_id", "owner_id", "cpu_time", "pilot_id")
        .iterator()
    ):
        seg = next(s for s in segments if s >= cpu_t) if cpu_t <= segments[-1] else segments[-1]
        kind = "private" if pilot_kind.get(pilot_id) else "generic"
        started[entity_of(g, o)][f"{kind}:{seg}"] += 1
    for e in entities:
        out(
            "diagnosis",
            what="jobs_started_by_pilot_kind_and_segment",
            entity=e,
            started=dict(sorted(started[e].items())),
        )

    # The corrector: factors over the last day, how often at a clamp.
    max_global = {
        name: float(body.get("MaxGlobalCorrectionFactor", 1))
        for name, body in gdpconfig.get("WMSHistory").items()
    }
    factors: dict[str, list] = defaultdict(list)
    slice_clamps: dict[str, Counter] = defaultdict(Counter)
    wms = gdpconfig.get("WMSHistory")
    for inst, g, u, f, sl in CorrectionRecord.objects.filter(at__gte=last_day_start).values_list(
        "instance", "group_id", "user_id", "factor", "slices"
    ):
        e = f"{gname[g]}:{uname[u]}" if u else gname[g]
        factors[e].append((inst, f))
        for name, value in sl.items():
            bound = float(wms.get(inst, {}).get(name, {}).get("MaxCorrection", 0) or 0)
            if bound and (abs(value - bound) < 1e-9 or abs(value - 1 / bound) < 1e-9):
                slice_clamps[e][name] += 1
    for e in sorted(factors):
        values = [f for _, f in factors[e]]
        inst = factors[e][0][0]
        bound = max_global.get(inst, 0)
        at_clamp = sum(1 for f in values if abs(f - bound) < 1e-9 or abs(f - 1 / bound) < 1e-9)
        out(
            "diagnosis",
            what="corrector_judged_window",
            entity=e,
            instance=inst,
            factor_last=round(values[-1], 3),
            factor_mean=round(sum(values) / len(values), 3),
            factor_min=round(min(values), 3),
            factor_max=round(max(values), 3),
            at_global_clamp_fraction=round(at_clamp / len(values), 3),
            slice_clamped_runs=dict(slice_clamps[e]),
            runs=len(values),
        )
    # Final TaskQueue priorities summed per entity: the corrected share the matcher draws by.
    prio: Counter = Counter()
    for tq_id, p in TaskQueue.objects.values_list("id", "priority"):
        if waiting.get(tq_id) and tq_id in tq_info:
            prio[tq_info[tq_id]["entity"]] += p
    total_p = sum(prio.values()) or 1.0
    out(
        "diagnosis",
        what="priority_share_at_end",
        shares={e: round(prio[e] / total_p, 4) for e in entities},
    )
    if unservable_series:
        out("diagnosis", what="unservable_waiting_per_hour", series=unservable_series)
    waiting_pilots_left = Pilot.objects.filter(status__in=PILOT_WAITING_STATES).count()
    out("diagnosis", what="pilots_waiting_at_end", n=waiting_pilots_left)


def write_chart(path, entities, expected, series, achieved, args) -> None:
    import plotly.graph_objects as go
    import plotly.io as pio

    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    hours = [p["hour"] for p in series]
    for i, e in enumerate(entities):
        color = palette[i % len(palette)]
        fig.add_trace(
            go.Scatter(
                x=hours,
                y=[100 * p["share"][e] for p in series],
                name=f"{e} achieved",
                line={"color": color},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[0, hours[-1] if hours else 1],
                y=[100 * expected[e]] * 2,
                name=f"{e} expected",
                line={"color": color, "dash": "dash"},
            )
        )
    fig.update_layout(
        title=f"bench/fairshare.py --scale {args.scale}: running-slot-time share per simulated "
        "hour (solid) against the expected share (dashed)",
        xaxis_title="simulated hours",
        yaxis_title="share of running jobs (%)",
    )
    pio.write_html(fig, path, include_plotlyjs=True, full_html=True)
