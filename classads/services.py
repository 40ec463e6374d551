"""Condor-G matchmaking, the stateful part: advertising site ads, submitting job and DAG ads,
the negotiator cycle (every minute) and the matchmaker monitor (every 2 minutes).

The pure decisions live in `ads`, `expansion` and `negotiation`; here are the transactions
(a matched DAG's nodes become matcher jobs in `dag_nodes`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from classad2 import ClassAd
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, Min, OuterRef, Value
from django.db.models.functions import Coalesce

from classads import ads, dag_nodes, expansion, negotiation
from classads.models import JobAd, JobAdNode, JobAdStatus, SiteAd, SiteAdSample
from core import clock, gdpconfig
from core.cycles import cycle
from matcher import services as matcher_services
from matcher.models import FINAL_STATES, Job
from matcher.taskqueue_priorities import groups_map
from shares import priorities as engine
from shares import services as share_services
from shares.models import GridGroup

log = logging.getLogger(__name__)

CHUNK = 5000  # ids per IN (...) list: a statement's parameters stay few


class JobAdActionError(Exception):
    """An action the job ad's state does not allow (409)."""


def _chunks(seq: Sequence, size: int = CHUNK):
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def _int_attr(ad: ClassAd, name: str) -> int | None:
    if name not in ad:
        return None
    value = ad.eval(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def site_of(ad: ClassAd) -> str:
    """The DIRAC site a matched job's nodes go to (parameter SiteAdSiteAttributes). Raises
    AdError naming the attribute when it is longer than a site name (cut, it would name
    another site)."""
    found = ("Name", str(ad["Name"]).strip())
    for attr in gdpconfig.get("SiteAdSiteAttributes"):
        if attr in ad:
            value = ad.eval(attr)
            if isinstance(value, str) and value.strip():
                found = (attr, value.strip())
                break
    attr, site = found
    limit = SiteAd._meta.get_field("site").max_length
    if len(site) > limit:
        raise ads.AdError(attr, f"names the DIRAC site: at most {limit} characters")
    return site


# --- site ads --------------------------------------------------------------------------------


@dataclass
class Advertised:
    site_ad: SiteAd | None
    created: bool = False
    ignored: bool = False
    reason: str = ""


def advertise(text: str, syntax: str = "auto", user=None, source: str = "advertise") -> Advertised:
    """condor_advertise UPDATE_STARTD_AD: store the ad under its Name, unless the stored one has
    an UpdateSequenceNumber at least as high (or the new one has none): then it is ignored, as
    the negotiator ignores it (STARTD_AD_REEVAL_EXPR). Raises AdError; nothing is stored then."""
    limit = ads.INT64_MAX if source == "monitor" else ads.SEQUENCE_MAX
    ad = ads.parse_site_ad(text, syntax, max_sequence=limit)
    name = str(ad["Name"]).strip()  # at most 255 characters (parse_site_ad)
    seq = _int_attr(ad, "UpdateSequenceNumber")
    now = clock.now()
    fields = {
        "text": str(ad),
        "sequence": seq,
        "cur_matches": _int_attr(ad, "CurMatches"),
        "max_matches": _int_attr(ad, "MaxMatches"),
        "want_ad_revaluate": "WantAdRevaluate" in ad and ad.eval("WantAdRevaluate") is True,
        "site": site_of(ad),
        "advertised": now,
        "advertised_by": user if getattr(user, "pk", None) else None,
    }
    for attempt in range(2):
        try:
            with transaction.atomic():
                stored = SiteAd.objects.select_for_update().filter(name=name).first()
                if stored is not None and stored.sequence is not None:
                    if seq is None or seq <= stored.sequence:
                        return Advertised(
                            stored,
                            ignored=True,
                            reason=(
                                f"UpdateSequenceNumber {seq} is not higher than the stored "
                                f"{stored.sequence}: the update is ignored"
                                if seq is not None
                                else f"no UpdateSequenceNumber, the stored ad has "
                                f"{stored.sequence}: the update is ignored"
                            ),
                        )
                before = stored.cur_matches if stored is not None else None
                if stored is None:
                    stored = SiteAd.objects.create(name=name, created=now, **fields)
                    created = True
                else:
                    for key, value in fields.items():
                        setattr(stored, key, value)
                    stored.save()
                    created = False
                # The monitor re-advertises every 2 minutes: keep its samples to the changes.
                if source != "monitor" or created or before != stored.cur_matches:
                    _sample(stored, now, source)
                return Advertised(stored, created=created)
        except IntegrityError:
            if attempt:  # lost the race to create the same Name twice: now it exists
                raise
    raise AssertionError("unreachable")


def _sample(site_ad: SiteAd, at, source: str) -> None:
    SiteAdSample.objects.create(
        site_ad=site_ad,
        at=at,
        cur_matches=site_ad.cur_matches,
        max_matches=site_ad.max_matches,
        source=source,
    )


def live_ad(site_ad: SiteAd) -> ClassAd:
    """The site ad as the negotiator sees it: the stored text with the live CurMatches."""
    ad = ClassAd(site_ad.text)
    if site_ad.cur_matches is not None:
        ad["CurMatches"] = site_ad.cur_matches
    return ad


# --- job and DAG ads ---------------------------------------------------------------------------


def job_ad_text(ad: ClassAd, owner, group: GridGroup) -> str:
    ad = ClassAd(str(ad))
    ad["Owner"] = owner.get_username()
    ad["AcctGroup"] = group.name
    return str(ad)


def submit_job_ads(owner, specs: Sequence[dict]) -> list[JobAd]:
    """Store validated job ad specs as idle job ads, all or nothing. Each spec: ad (a parsed
    ClassAd), owner_group, setup, user_priority, name, nodes [{name, cpu_time, submit}], is_dag.
    """
    now = clock.now()
    rows = []
    for spec in specs:
        text = job_ad_text(spec["ad"], owner, spec["owner_group"])
        rows.append(
            JobAd(
                owner=owner,
                owner_group=spec["owner_group"],
                name=spec.get("name", ""),
                is_dag=spec.get("is_dag", False),
                setup=spec["setup"],
                user_priority=spec.get("user_priority", 1),
                text=text,
                digest=hashlib.sha1(text.encode()).hexdigest(),
                nodes=spec["nodes"],
                created=now,
            )
        )
    with transaction.atomic():
        return JobAd.objects.bulk_create(rows, batch_size=2000)


def release(job_ad_id: int, user) -> JobAd:
    """condor_release: a held job ad waits for the negotiator again."""
    with transaction.atomic():
        job_ad = JobAd.objects.select_for_update().get(pk=job_ad_id)
        if job_ad.status != JobAdStatus.HELD:
            raise JobAdActionError(f"job ad {job_ad_id} is {job_ad.status}, not held")
        job_ad.status = JobAdStatus.IDLE
        job_ad.hold_reason = ""
        job_ad.save(update_fields=["status", "hold_reason"])
    return job_ad


def remove(job_ad_id: int, user) -> JobAd:
    """condor_rm: an idle or held ad is removed; a matched one also has its nodes killed."""
    with transaction.atomic():
        job_ad = JobAd.objects.select_for_update().get(pk=job_ad_id)
        if job_ad.status in (JobAdStatus.REMOVED, JobAdStatus.COMPLETED):
            raise JobAdActionError(f"job ad {job_ad_id} is already {job_ad.status}")
        job_ad.status = JobAdStatus.REMOVED
        job_ad.save(update_fields=["status"])
        nodes = list(
            JobAdNode.objects.filter(job_ad=job_ad)
            .exclude(job__status__in=FINAL_STATES)
            .values_list("job_id", flat=True)
        )
    for job_id in nodes:
        try:
            matcher_services.kill_job(job_id, user, f"job ad {job_ad_id} removed")
        except matcher_services.JobActionError:
            pass  # finished meanwhile
    return job_ad


# --- the negotiator ------------------------------------------------------------------------------


@dataclass
class _Idle:
    id: int
    owner_id: int
    group_id: int
    user_priority: int
    digest: str


def _load_sites():
    rows = list(
        SiteAd.objects.order_by("id").values_list(
            "id", "name", "text", "cur_matches", "want_ad_revaluate", "site"
        )
    )
    states = []
    for index, (_, _, text, cur, want, _) in enumerate(rows):
        ad = ClassAd(text)
        if cur is not None:
            ad["CurMatches"] = cur
        states.append(
            negotiation.SiteState(
                index=index,
                ad=ad,
                want_ad_revaluate=want,
                cur_matches=cur,
                clauses=negotiation.own_clauses(ad),
            )
        )
    return rows, states


def _fair_share(idle: list[_Idle], ac_of_digest: dict[str, int]) -> list[tuple[int, int]]:
    """Job order: queues of (owner, group, autocluster) get the priorities the TaskQueues of
    the same owner and group would get (the fair-share engine, with the current corrections);
    within a queue, higher UserPriority first, then the older job."""
    queues: dict[tuple[int, int, int], list[_Idle]] = defaultdict(list)
    for job in idle:
        queues[(job.owner_id, job.group_id, ac_of_digest[job.digest])].append(job)
    keys = list(queues)
    loads = [
        engine.TaskQueueLoad(
            id=i,
            owner_id=owner,
            group_id=group,
            priority_sum=sum(j.user_priority for j in queues[(owner, group, ac)]),
            jobs=len(queues[(owner, group, ac)]),
        )
        for i, (owner, group, ac) in enumerate(keys)
    ]
    priorities = engine.taskqueue_priorities(
        loads,
        groups_map(),
        share_services.latest_corrections(),
        gdpconfig.get("PRIORITY_CONSOLIDATION"),
    )
    return negotiation.fair_share_order(
        [
            (
                key[2],
                priorities.get(i, engine.MIN_PRIORITY),
                [j.id for j in sorted(queues[key], key=lambda j: (-j.user_priority, j.id))],
            )
            for i, key in enumerate(keys)
        ],
        batch=gdpconfig.get("NegotiatorQueueBatch"),
    )


@cycle("negotiator")
def negotiator_cycle() -> dict:
    """One negotiation: every idle job ad against every site ad (docs/developer-guide.md,
    Condor-G ClassAd matchmaking)."""
    started = time.perf_counter()
    site_rows, sites = _load_sites()
    idle = [
        _Idle(*row)
        for row in JobAd.objects.filter(status=JobAdStatus.IDLE)
        .order_by("id")
        .values_list("id", "owner_id", "owner_group_id", "user_priority", "digest")
    ]
    counts = {"idle_jobs": len(idle), "site_ads": len(sites), "autoclusters": 0}
    if not idle or not sites:
        return {**counts, "matches": 0, "held": 0, "evaluations": 0, "seconds": 0.0}

    # Each distinct ad text is parsed once; ads with the same significant attributes share an
    # autocluster, evaluated once per site ad.
    firsts = dict(
        JobAd.objects.filter(status=JobAdStatus.IDLE)
        .order_by()
        .values_list("digest")
        .annotate(first=Min("id"))
    )
    texts = {}
    for chunk in _chunks(list(firsts.values())):
        texts.update(dict(JobAd.objects.filter(pk__in=chunk).values_list("digest", "text")))
    significant = negotiation.significant_attributes(s.ad for s in sites)
    job_ads: dict[str, ClassAd] = {}
    ac_of_digest: dict[str, int] = {}
    key_index: dict[tuple, int] = {}
    autoclusters: list[negotiation.Autocluster] = []
    for digest, text in texts.items():
        ad = ClassAd(text)
        job_ads[digest] = ad
        key = negotiation.autocluster_key(ad, significant)
        if key not in key_index:
            key_index[key] = len(autoclusters)
            autoclusters.append(negotiation.make_autocluster(len(autoclusters), ad))
        ac_of_digest[digest] = key_index[key]
    idle = [j for j in idle if j.digest in ac_of_digest]  # a digest submitted meanwhile waits
    counts["autoclusters"] = len(autoclusters)

    order = _fair_share(idle, ac_of_digest)
    result = negotiation.Negotiator(sites, autoclusters).run(order)
    decided = time.perf_counter()
    written = _write_matches(result.matches, idle, job_ads, site_rows, sites)
    seconds = time.perf_counter() - started
    return {
        **counts,
        "evaluations": result.evaluations,
        "matches": written["matched"],
        "held": written["held"],
        "lost": written["lost"],
        "unmatched": result.unmatched,
        "node_jobs": written["node_jobs"],
        "decide_seconds": round(decided - started, 3),
        "seconds": round(seconds, 3),
        "matches_per_s": round(written["matched"] / seconds, 1) if seconds > 0 else 0.0,
    }


def _expansion_for(cache: dict, job_ad: ClassAd, digest: str, site: ClassAd, cur, index: int):
    """$$() expansion of one distinct job ad against one site ad, computed once per site ad,
    or once per site ad state when it could read CurMatches (a `$$([expr])`, or the name)."""
    text = str(job_ad)
    reads_state = "$$([" in text or "curmatches" in text.lower()
    key = (digest, index, cur if reads_state else None)
    if key not in cache:
        if "$$(" not in text:
            cache[key] = expansion.Expansion()
        else:
            if cur is not None:
                site["CurMatches"] = cur
            cache[key] = expansion.expand(job_ad, site)
    return cache[key]


def _write_matches(matches, idle, job_ads, site_rows, sites) -> dict:
    now = clock.now()
    by_id = {j.id: j for j in idle}
    # CurMatches each match saw: replay the increments in match order.
    cur = {s.index: None for s in sites}
    for index, row in enumerate(site_rows):
        cur[index] = row[3]
    seen = []
    for m in matches:
        seen.append(cur[m.site])
        if sites[m.site].want_ad_revaluate:
            cur[m.site] = (cur[m.site] or 0) + 1

    cache: dict = {}
    parsed: dict[int, ClassAd] = {}  # each matched site ad parsed once, CurMatches set per use
    decided = []  # (match, expansion)
    for m, cur_then in zip(matches, seen, strict=True):
        digest = by_id[m.job].digest
        if m.site not in parsed:
            parsed[m.site] = ClassAd(site_rows[m.site][2])
        exp = _expansion_for(cache, job_ads[digest], digest, parsed[m.site], cur_then, m.site)
        decided.append((m, exp, cur_then))

    with transaction.atomic():
        # Claim: only ads still idle (a user may have removed one meanwhile), rows locked.
        still_idle: set[int] = set()
        ids = sorted(m.job for m in matches)
        for chunk in _chunks(ids):
            still_idle.update(
                JobAd.objects.select_for_update()
                .filter(pk__in=chunk, status=JobAdStatus.IDLE)
                .values_list("pk", flat=True)
            )
        decided = [d for d in decided if d[0].job in still_idle]
        lost = len(matches) - len(decided)
        _set_outcomes(
            [
                (
                    JobAdStatus.HELD if exp.held else JobAdStatus.MATCHED,
                    exp.hold_reason,
                    site_rows[m.site][0],
                    site_rows[m.site][1],
                    site_rows[m.site][5],
                    m.rank,
                    json.dumps(exp.match_attrs),
                    m.job,
                )
                for m, exp, _ in decided
            ],
            now,
        )
        node_jobs = dag_nodes.create_node_jobs(
            [(m, exp) for m, exp, _ in decided if not exp.held], job_ads, by_id, site_rows
        )
        # The negotiator's half of CurMatches: +1 per match of a WantAdRevaluate ad.
        per_site = Counter(m.site for m, _, _ in decided)
        for index, n in sorted(per_site.items()):
            if sites[index].want_ad_revaluate:
                SiteAd.objects.filter(pk=site_rows[index][0]).update(
                    cur_matches=Coalesce(F("cur_matches"), Value(0)) + n
                )
        fresh = SiteAd.objects.filter(pk__in=[site_rows[i][0] for i in per_site])
        SiteAdSample.objects.bulk_create(
            SiteAdSample(
                site_ad_id=s.pk,
                at=now,
                cur_matches=s.cur_matches,
                max_matches=s.max_matches,
                source="negotiator",
            )
            for s in fresh.only("pk", "cur_matches", "max_matches")
        )
    held = sum(1 for _, exp, _ in decided if exp.held)
    return {"matched": len(decided) - held, "held": held, "lost": lost, "node_jobs": node_jobs}


# Rows per UPDATE … FROM (VALUES …): large enough to save round trips, far below PostgreSQL's
# 65,535 parameters per statement.
OUTCOME_CHUNK = 2000


def _set_outcomes(rows: list[tuple], now) -> None:
    """Write each claimed ad's match in bulk: (status, hold_reason, site_ad_id, site_ad_name,
    site, rank, match_attrs JSON, id). Every row differs (its Rank, its expansions), and
    Django's bulk_update builds a CASE per field and row: ~3 ms a row in Python alone."""
    from core import db

    columns = ["status", "hold_reason", "site_ad_id", "site_ad_name", "site", "rank"]
    columns.append("match_attrs")
    # Typed VALUES: a NULL site ad or a text JSON would not fit the columns.
    casts = [None, None, "bigint", None, None, "double precision", "jsonb", "bigint"]
    sets = ", ".join([f"{c} = v.{c}" for c in columns] + ["matched = %s"])
    with connection.cursor() as cur:
        for start in range(0, len(rows), OUTCOME_CHUNK):
            chunk = rows[start : start + OUTCOME_CHUNK]
            cur.execute(
                f"UPDATE {JobAd._meta.db_table} t SET {sets} "
                f"FROM (VALUES {db.values_sql(casts, len(chunk))}) "
                f"AS v({', '.join([*columns, 'id'])}) WHERE t.id = v.id",
                [now, *[x for row in chunk for x in row]],
            )


# --- the matchmaker monitor ---------------------------------------------------------------------


@cycle("matchmaker_monitor")
def matchmaker_monitor() -> dict:
    """The seed's matchmaker monitor: count the job ads matched to each site ad whose nodes are
    still queued or running, and re-advertise every site ad with that CurMatches and a higher
    UpdateSequenceNumber (the negotiator only ever increments CurMatches)."""
    live_nodes = JobAdNode.objects.filter(job_ad=OuterRef("pk")).exclude(
        job__status__in=FINAL_STATES
    )
    completed = (
        JobAd.objects.filter(status=JobAdStatus.MATCHED)
        .filter(~Exists(live_nodes))
        .update(status=JobAdStatus.COMPLETED)
    )
    counts = dict(
        JobAd.objects.filter(status=JobAdStatus.MATCHED, site_ad__isnull=False)
        .order_by()
        .values_list("site_ad")
        .annotate(n=Count("*"))
    )
    readvertised = changed = 0
    unix_now = int(clock.now().timestamp())
    for site_ad in SiteAd.objects.order_by("id"):
        ad = ClassAd(site_ad.text)
        n = counts.get(site_ad.pk, 0)
        ad["CurMatches"] = n
        # The seed uses the UNIX time; +1 keeps it higher when two runs share a second.
        ad["UpdateSequenceNumber"] = max((site_ad.sequence or 0) + 1, unix_now)
        before = site_ad.cur_matches
        outcome = advertise(str(ad), syntax="new", source="monitor")
        readvertised += not outcome.ignored
        changed += before != n
    cutoff = clock.now() - timedelta(days=gdpconfig.get("SiteAdSampleDays"))
    pruned = SiteAdSample.objects.filter(at__lt=cutoff).delete()[0]
    return {
        "site_ads": readvertised,
        "changed": changed,
        "matched_jobs": sum(counts.values()),
        "completed": completed,
        "pruned_samples": pruned,
    }


def node_job_ids(job_ad: JobAd) -> list[int]:
    return list(job_ad.node_jobs.values_list("job_id", flat=True))


def job_ad_of(job: Job) -> JobAd | None:
    node = JobAdNode.objects.filter(job=job).select_related("job_ad").first()
    return node.job_ad if node else None
