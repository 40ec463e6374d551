"""DAG nodes become matcher jobs: once the negotiator matched a DAG's job ad to a site ad,
each node is a Job restricted to that site, activated into its TaskQueue in bulk by the job
lifecycle's service (matcher.services.enqueue_new_jobs), with the site's environment in its
JDL (how the seed's nodes find their site).
"""

from __future__ import annotations

import re
from collections import defaultdict

from classad2 import ClassAd

from classads import ads, expansion
from classads.models import JobAd, JobAdNode
from matcher import services as matcher_services

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


def create_node_jobs(decided, job_ads, by_id, site_rows) -> int:
    """Each matched ad's nodes become matcher Jobs restricted to the matched site, activated
    into that site's TaskQueues by the matcher's bulk submission (enqueue_new_jobs: COPY on
    PostgreSQL). Call inside the cycle's transaction."""
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
                        "owner_group_id": idle.group_id,
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
    job_ids = matcher_services.enqueue_new_jobs(
        [spec for _, _, spec in items], reason="matched by the negotiator"
    )
    links = [
        JobAdNode(job_ad_id=ad_id, job_id=job_id, name=node_name[:128])
        for (ad_id, node_name, _), job_id in zip(items, job_ids, strict=True)
    ]
    JobAdNode.objects.bulk_create(links, batch_size=2000)
    return len(links)
