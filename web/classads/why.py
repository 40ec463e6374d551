"""The ClassAd matchmaking part of "why is my job not running?"."""

from classads.models import JobAdNode, JobAdStatus
from web.matcher.why_part import Part


def classad_parts(job) -> list[Part]:
    node = JobAdNode.objects.filter(job_id=job.pk).select_related("job_ad").first()
    if node is None:
        return []
    ad = node.job_ad
    part = Part(f"ClassAd matchmaking ({'DAG' if ad.is_dag else 'job'} ad {ad.pk})")
    part.add(
        f"The ad is {ad.status}"
        + (
            f" at {ad.site_ad_name} (Rank {ad.rank:g})"
            if ad.site_ad_name and ad.rank is not None
            else ""
        ),
        f"/classads/jobs/{ad.pk}/",
    )
    if ad.status == JobAdStatus.HELD:
        part.blocking = True
        part.add(f"Hold reason: {ad.hold_reason}")
    return [part]
