"""What a task's page shows of its jobs beyond their counts: how many were in each state over
time (from their status history, drawn by the matcher's states-over-time chart) and the retry
chains (a job closed and retried as a new job, that one retried in turn: original → retry →
retry; brokerage.lifecycle.reassign records each link as TaskJob.retry_of)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from brokerage.models import TaskJob
from matcher.models import Job, JobStatusHistory
from web.matcher import charts

MAX_TRANSITIONS = 50_000  # the chart reads at most these many status changes
MAX_CHAINS = 50  # chains listed, the newest originals first


def states_over_time(task_id: int) -> tuple[dict[str, tuple[list, list]], bool]:
    """({state: (instants, jobs in it)}, cut): a step per instant at which any of the task's
    jobs changed state; every state's series runs to the last instant. `cut`: more than
    MAX_TRANSITIONS changes, the chart shows the first ones."""
    rows = list(
        JobStatusHistory.objects.filter(job__task_job__task_id=task_id)
        .order_by("at", "id")
        .values_list("at", "from_status", "to_status")[: MAX_TRANSITIONS + 1]
    )
    cut = len(rows) > MAX_TRANSITIONS
    rows = rows[:MAX_TRANSITIONS]
    counts: Counter[str] = Counter()
    series: dict[str, tuple[list, list]] = {}
    for i, (at, from_status, to_status) in enumerate(rows):
        if from_status:
            counts[from_status] -= 1
        counts[to_status] += 1
        if i + 1 == len(rows) or rows[i + 1][0] != at:  # a point per instant, after its changes
            for state, n in counts.items():
                xs, ys = series.setdefault(state, ([], []))
                if not ys or ys[-1] != n:
                    xs.append(at)
                    ys.append(max(n, 0))
    if rows:
        end = rows[-1][0]
        for xs, ys in series.values():
            if xs[-1] != end:
                xs.append(end)
                ys.append(ys[-1])
    return series, cut


def states_chart(task_id: int) -> tuple[str, bool]:
    """The chart's HTML ("" when no job has a history yet) and whether it was cut."""
    series, cut = states_over_time(task_id)
    if not series:
        return "", False
    fig = charts.states_over_time_figure(series)
    fig.update_traces(line_shape="hv")  # a count holds until the next change: steps
    return charts.to_html(fig), cut


@dataclass(frozen=True)
class Link:
    job_id: int
    attempt: int
    status: str


def retry_chains(task_id: int) -> tuple[list[list[Link]], int]:
    """The task's retry chains, each from its original job to its last retry, the newest
    originals first, at most MAX_CHAINS; and how many chains there are."""
    links = dict(
        TaskJob.objects.filter(task_id=task_id, retry_of__isnull=False).values_list(
            "retry_of_id", "job_id"
        )
    )
    if not links:
        return [], 0
    retried_as = set(links.values())
    roots = sorted((j for j in links if j not in retried_as), reverse=True)
    chains_ids = []
    for root in roots:
        chain, seen = [root], {root}
        while chain[-1] in links and links[chain[-1]] not in seen:
            chain.append(links[chain[-1]])
            seen.add(chain[-1])
        chains_ids.append(chain)
    shown = chains_ids[:MAX_CHAINS]
    ids = [j for chain in shown for j in chain]
    status = dict(Job.objects.filter(pk__in=ids).values_list("pk", "status"))
    attempt = dict(TaskJob.objects.filter(job_id__in=ids).values_list("job_id", "attempt"))
    chains = [[Link(j, attempt.get(j, 0), status.get(j, "gone")) for j in chain] for chain in shown]
    return chains, len(chains_ids)


def context(task_id: int) -> dict:
    chart, cut = states_chart(task_id)
    chains, n_chains = retry_chains(task_id)
    return {
        "states_chart": chart,
        "states_cut": cut,
        "max_transitions": MAX_TRANSITIONS,
        "retry_chains": chains,
        "n_retry_chains": n_chains,
    }
