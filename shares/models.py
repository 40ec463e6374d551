from django.contrib.auth.models import AbstractUser
from django.core.validators import MinValueValidator
from django.db import models


class GridGroup(models.Model):
    """A DIRAC group: the unit of JobShare. Users submit jobs as a member of one group."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=200, blank=True)
    job_share = models.FloatField(default=1000.0, validators=[MinValueValidator(0.0)])
    # DIRAC group properties. JobSharing: the group's jobs are one entity for fair share and
    # members may see and act on each other's jobs. GenericPilot: its credential may run
    # generic pilots that take any group's (non-private) jobs. ProductionManagement: its
    # members may submit production tasks (analysis tasks are open to every user).
    job_sharing = models.BooleanField("JobSharing", default=False)
    generic_pilot = models.BooleanField("GenericPilot", default=False)
    production_management = models.BooleanField("ProductionManagement", default=False)

    class Meta:
        ordering = ["name"]
        verbose_name = "group"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(job_share__gte=0), name="job_share_not_negative"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def properties(self) -> list[str]:
        return [
            label
            for label, on in (
                ("JobSharing", self.job_sharing),
                ("GenericPilot", self.generic_pilot),
                ("ProductionManagement", self.production_management),
            )
            if on
        ]


class User(AbstractUser):
    """A person or service with a grid identity (X.509 DN) and the groups it may act as."""

    dn = models.CharField("DN", max_length=255, unique=True, null=True, blank=True)
    grid_groups = models.ManyToManyField(GridGroup, related_name="members", blank=True)

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"

    def save(self, *args, **kwargs):
        if not self.dn:
            self.dn = None  # many users may have no DN yet; unique applies to real ones
        super().save(*args, **kwargs)

    def identity(self) -> str:
        return self.dn or self.username

    def visible_group_ids(self) -> list[int]:
        """Groups whose jobs this user sees beside its own: its JobSharing groups."""
        return list(self.grid_groups.filter(job_sharing=True).values_list("id", flat=True))


# How the grid names the fields a GroupChange records.
FIELD_LABELS = {
    "job_share": "JobShare",
    "job_sharing": "JobSharing",
    "generic_pilot": "GenericPilot",
    "description": "description",
}


class GroupChange(models.Model):
    """One change of a group's JobShare or properties: who, when, old -> new; revertible."""

    group = models.ForeignKey(GridGroup, on_delete=models.CASCADE, related_name="changes")
    field = models.CharField(max_length=32)
    old = models.JSONField(null=True)
    new = models.JSONField(null=True)
    changed_by = models.ForeignKey(
        "shares.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField()
    comment = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.group} {self.field}: {self.old} → {self.new}"

    @property
    def field_label(self) -> str:
        return FIELD_LABELS.get(self.field, self.field)


class UsageTick(models.Model):
    """One sampling moment of the running jobs; `minutes` is the time it stands for (1, or
    60 once thinned)."""

    at = models.DateTimeField(db_index=True)
    minutes = models.FloatField(default=1.0)

    class Meta:
        ordering = ["at"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} ({self.minutes:g} min)"


class UsageSample(models.Model):
    """Running jobs of a group (user None) or of a (user, group) at a tick, averaged over the
    tick's minutes. Only entities with running jobs have rows: absent means 0."""

    tick = models.ForeignKey(UsageTick, on_delete=models.CASCADE, related_name="samples")
    group = models.ForeignKey(GridGroup, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        "shares.User", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    running = models.FloatField()

    def __str__(self) -> str:
        return f"{self.group_id}/{self.user_id}: {self.running:g}"


class CorrectionRecord(models.Model):
    """A corrector instance's factor for one entity at one priority cycle (the latest is in
    force; older ones draw the corrections-over-time chart)."""

    at = models.DateTimeField(db_index=True)
    instance = models.CharField(max_length=100)
    group = models.ForeignKey(GridGroup, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        "shares.User", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    slices = models.JSONField(default=dict)
    factor = models.FloatField()

    class Meta:
        ordering = ["-at", "instance"]

    def __str__(self) -> str:
        return f"{self.instance} {self.group_id}/{self.user_id} x{self.factor:.3f}"
