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
    # generic pilots that take any group's (non-private) jobs.
    job_sharing = models.BooleanField("JobSharing", default=False)
    generic_pilot = models.BooleanField("GenericPilot", default=False)

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
