"""DAG nodes become matcher jobs: once the negotiator matched a DAG's job ad to a site ad,
each node is a Job restricted to that site, activated into its TaskQueue in bulk, with the
site's environment in its JDL (how the seed's nodes find their site).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from classad2 import ClassAd
from django.db import connection

from classads import ads, expansion
from classads.models import JobAd, JobAdNode
from config import clock, gdpconfig
from matcher import services as matcher_services
from matcher.models import Job, JobStatus
from shares.models import GridGroup

ENV_RE = re.compile(r"\$ENV\(([A-Za-z_][A-Za-z0-9_]*)\)")


def node_jdl(job_ad_name: str, node: dict, site: str, site_ad: str, env: dict[str, str]) -> str:
    """A node's JDL: where it was bound, the site's environment, and the node's own submit
    lines with `$ENV(X)` taken from that environment (how the seed's DAG nodes find their
    site: GlobusScheduler = $ENV(SiteGatekeeperURL))."""
    ad = ClassAd()
    ad["JobName"] = f"{job_ad_name}/{node.get('name', '')}".strip("/")
    ad["Site"] = site
    ad["SiteAd"] = site_ad
    # DAGMan's environment, from the site ad (the node's own Environment may follow).
    ad["SiteEnvironment"] = ";".join(f"{k}={v}" for k, v in env.items())
    submit = node.get("submit") or ""
    if submit:
        text = ENV_RE.sub(lambda m: env.get(m.group(1), ""), submit)
        try:
            for key, value in ads.parse_submit(text).items():
                ad[key] = value
        except ads.AdError:
            ad["Submit"] = text
    return str(ad)


def node_job(job_id: int, spec: dict, definition: dict, tq: int, now) -> dict:
    """The matcher Job row of one node, column by column, activated into TaskQueue `tq`."""
    from matcher import taskqueues

    return {
        "id": job_id,
        "owner_id": spec["owner_id"],
        "owner_group_id": definition["owner_group_id"],
        "name": spec["name"],
        "setup": spec["setup"],
        "cpu_time": spec["cpu_time"],
        **{f: json.dumps(definition[f]) for f in taskqueues.MULTI_VALUED_FIELDS},
        "user_priority": spec["user_priority"],
        "status": JobStatus.ACTIVATED.value,
        "status_reason": "waiting in TaskQueue",
        "task_queue_id": tq,
        "site": "",
        "jdl": spec["jdl"],
        "reschedule_count": 0,
        "created": now,
        "status_changed": now,
    }


def activate_nodes(specs: list[dict]) -> list[int]:
    """Node specs -> activated matcher Jobs in the TaskQueues of their definitions (Sites =
    the matched site), with membership, per-priority counts and history, as the matcher's
    submit_jobs writes them, but in bulk: COPY on PostgreSQL, executemany on SQLite
    (config.db.bulk_insert). submit_jobs' Django bulk_create of eight JSON lists per job cost
    ~0.7 ms a job, most of a 10,000-match cycle. Call inside the cycle's transaction."""
    from config import db
    from matcher import taskqueues
    from matcher.models import JobStatusHistory, TaskQueueJob

    now = clock.now()
    segments = gdpconfig.get("CPUSegments")
    defs = [
        taskqueues.definition(
            spec["owner_id"],
            spec["owner_group"].pk,
            spec["setup"],
            spec["cpu_time"],
            {"sites": spec["sites"]},
            segments,
        )
        for spec in specs
    ]
    tqs = [tq.pk for tq in matcher_services.taskqueues_for(defs)]
    act = JobStatus.ACTIVATED.value
    with connection.cursor() as cur:
        ids = db.reserve_ids(Job, len(specs), cur)
        rows = list(zip(ids, specs, defs, tqs, strict=True))
        jobs = [node_job(job_id, spec, d, tq, now) for job_id, spec, d, tq in rows]
        # Jobs first: the memberships and history rows refer to them.
        db.bulk_insert(cur, Job, list(jobs[0]) if jobs else [], [tuple(j.values()) for j in jobs])
        db.bulk_insert(
            cur,
            TaskQueueJob,
            ["job_id", "task_queue_id", "user_priority"],
            [(job_id, tq, spec["user_priority"]) for job_id, spec, _, tq in rows],
        )
        db.bulk_insert(
            cur,
            JobStatusHistory,
            ["job_id", "at", "from_status", "to_status", "reason"],
            [
                (job_id, now, "", act, f"matched by the negotiator; joined TaskQueue {tq}")
                for job_id, _, _, tq in rows
            ],
        )
    matcher_services.add_to_counts(
        Counter((tq, spec["user_priority"]) for tq, spec in zip(tqs, specs, strict=True))
    )
    return ids


def create_node_jobs(decided, job_ads, by_id, site_rows) -> int:
    """Each matched ad's nodes become matcher Jobs restricted to the matched site, activated
    into that site's TaskQueues by the matcher's own submission service."""
    from classads.services import _chunks

    if not decided:
        return 0
    ids = [m.job for m, _ in decided]
    info = {}
    for chunk in _chunks(ids):
        info.update(
            {
                r[0]: r[1:]
                for r in JobAd.objects.filter(pk__in=chunk).values_list(
                    "pk", "name", "setup", "nodes"
                )
            }
        )
    groups = GridGroup.objects.in_bulk({by_id[i].group_id for i in ids})
    env_cache: dict = {}
    per_owner: dict[int, list] = defaultdict(list)  # owner -> [(job ad id, node name, spec)]
    for m, exp in decided:
        idle = by_id[m.job]
        name, setup, nodes = info[m.job]
        _site_id, site_name, _, _, _, dirac_site = site_rows[m.site]
        key = (idle.digest, m.site, tuple(sorted(exp.expanded.items())))
        if key not in env_cache:
            ad = expansion.expanded_ad(job_ads[idle.digest], exp)
            env_value = ad.eval("Environment") if "Environment" in ad else None
            env_cache[key] = expansion.parse_environment(env_value)
        env = env_cache[key]
        label = name or f"ad{m.job}"
        for node in nodes:
            per_owner[idle.owner_id].append(
                (
                    m.job,
                    node.get("name", ""),
                    {
                        "owner_id": idle.owner_id,
                        "owner_group": groups[idle.group_id],
                        "name": f"{label}/{node.get('name', '')}"[:128],
                        "setup": setup,
                        "cpu_time": node["cpu_time"],
                        "user_priority": idle.user_priority,
                        "sites": [dirac_site],
                        "jdl": node_jdl(label, node, dirac_site, site_name, env),
                    },
                )
            )
    items = [item for owner_items in per_owner.values() for item in owner_items]
    job_ids = activate_nodes([spec for _, _, spec in items])
    links = [
        JobAdNode(job_ad_id=ad_id, job_id=job_id, name=node_name[:128])
        for (ad_id, node_name, _), job_id in zip(items, job_ids, strict=True)
    ]
    JobAdNode.objects.bulk_create(links, batch_size=2000)
    return len(links)
