from django.conf import settings
from django.db import models

from matcher.models import Job
from shares.models import GridGroup
from shares.ownership import OwnedQuerySet


class SiteAd(models.Model):
    """A grid site's ClassAd as the collector holds it (condor_advertise UPDATE_STARTD_AD).

    `text` is the ad as last accepted, in the new syntax. CurMatches has two owners: the
    negotiator increments `cur_matches` on every match of a WantAdRevaluate ad, the matchmaker
    monitor resets it to the real count; the live value is put into the ad whenever it is
    evaluated or shown. MaxMatches is read only by the ad's own Requirements.
    """

    name = models.CharField(max_length=255, unique=True, help_text="the ad's Name")
    text = models.TextField(help_text="the ad, new ClassAd syntax")
    sequence = models.BigIntegerField(
        "UpdateSequenceNumber", null=True, blank=True, help_text="absent: any update replaces it"
    )
    cur_matches = models.IntegerField("CurMatches", null=True, blank=True)
    max_matches = models.IntegerField("MaxMatches", null=True, blank=True)
    want_ad_revaluate = models.BooleanField("WantAdRevaluate", default=False)
    site = models.CharField(
        max_length=128, blank=True, help_text="the DIRAC site its matched jobs' nodes go to"
    )
    advertised = models.DateTimeField()
    advertised_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField()

    class Meta:
        # The negotiator's site order (ties go to the earlier ad): first advertised first.
        ordering = ["id"]
        verbose_name = "site ad"
        permissions = [("advertise_sitead", "May advertise site ads (condor_advertise)")]

    def __str__(self) -> str:
        return self.name


class SiteAdSample(models.Model):
    """CurMatches / MaxMatches of a site ad at one moment: after each negotiation that matched
    it, each monitor run and each advertisement. Draws the site ad's chart."""

    site_ad = models.ForeignKey(SiteAd, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField()
    cur_matches = models.IntegerField(null=True)
    max_matches = models.IntegerField(null=True)
    source = models.CharField(max_length=16)  # negotiator | monitor | advertise

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["site_ad", "at"], name="siteadsample_ad_at")]

    def __str__(self) -> str:
        return f"{self.site_ad_id} {self.at:%H:%M:%S}: {self.cur_matches}/{self.max_matches}"


class JobAdStatus(models.TextChoices):
    IDLE = "idle"  # waiting for the negotiator
    MATCHED = "matched"  # bound to a site; its nodes are queued or running there
    COMPLETED = "completed"  # every node reached a final state
    HELD = "held"  # $$() expansion failed; released by its owner or staff
    REMOVED = "removed"


class JobAd(models.Model):
    """A job, or a DAG of jobs that must all run at one site, waiting for Condor-G matchmaking.

    The ad (`text`, new syntax) carries Requirements, Rank (0.0 when not given) and `$$()`
    references; `nodes` are the DAG's nodes (one node for a plain job), each becoming a matcher
    Job restricted to the matched site once the negotiator has matched the ad.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    owner_group = models.ForeignKey(GridGroup, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=128, blank=True)
    is_dag = models.BooleanField("DAG", default=False)
    setup = models.CharField(max_length=64)
    user_priority = models.PositiveSmallIntegerField(default=1)
    text = models.TextField(help_text="the job's ClassAd, new syntax")
    # Identical ads share a digest: the negotiator parses each distinct ad once.
    digest = models.CharField(max_length=40)
    nodes = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=JobAdStatus.choices, default=JobAdStatus.IDLE)
    hold_reason = models.CharField(max_length=255, blank=True)
    site_ad = models.ForeignKey(
        SiteAd, null=True, blank=True, on_delete=models.SET_NULL, related_name="job_ads"
    )
    site_ad_name = models.CharField(max_length=255, blank=True, help_text="matched ad's Name")
    site = models.CharField(max_length=128, blank=True, help_text="DIRAC site of its nodes")
    rank = models.FloatField(null=True, blank=True, help_text="its Rank of the matched ad")
    # MATCH_<SiteAttr> and MATCH_EXP_<JobAttr> written at the match, as expression text.
    match_attrs = models.JSONField(default=dict, blank=True)
    matched = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField()

    objects = OwnedQuerySet.as_manager()  # visible_to(user): shares.ownership's rule

    class Meta:
        ordering = ["-id"]
        verbose_name = "job ad"
        indexes = [
            models.Index(fields=["status", "id"], name="jobad_status_id"),
            models.Index(fields=["site_ad", "status"], name="jobad_sitead_status"),
            models.Index(fields=["owner", "-id"], name="jobad_owner_id"),
        ]

    def __str__(self) -> str:
        return f"{'DAG' if self.is_dag else 'Job'} ad {self.pk}"


JOB_AD_STATUS_CHOICES = JobAdStatus.choices  # named for the OpenAPI enum


class JobAdNode(models.Model):
    """A matcher Job created for one node of a matched job ad."""

    job_ad = models.ForeignKey(JobAd, on_delete=models.CASCADE, related_name="node_jobs")
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="classad_node")
    name = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["job_ad", "id"]

    def __str__(self) -> str:
        return f"{self.job_ad_id}/{self.name} -> job {self.job_id}"
