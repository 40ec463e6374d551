"""The site mask (DIRAC's SiteStatus, BigPanDA's queue blacklisting): staff ban a site or one
of its CEs, with a reason, and allow it again; every change is kept (SiteMaskChange: who,
when, why).

What a ban means: a pilot already there gets no job (matcher.dispatcher, through the
topology snapshot: within TOPOLOGY_CACHE_SECONDS on other processes); the director sends a
banned site or CE no pilot (it plans over
`unmasked_ces`, as do the dispatcher's and the servability's views of the active CEs), and the
brokerage places no job at a PanDA queue of a banned site or CE (brokerage.checks.site_mask,
which reads `masked_reason`). A CE that is draining stays draining: only a ban is undone by an
allow.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from core import clock
from matcher import topology
from matcher.models import ComputingElement, Site, SiteMaskChange

BAN, ALLOW = SiteMaskChange.Action.BAN, SiteMaskChange.Action.ALLOW
BANNED = "banned"


def unmasked_ces():
    """The CEs that take pilots: active, at a site not banned; their sites loaded, in the CEs'
    order (site, name)."""
    return ComputingElement.objects.select_related("site").filter(
        status=ComputingElement.Status.ACTIVE, site__status=Site.Status.ACTIVE
    )


def masked_reason(site_status: str, ce_status: str | None = None) -> str:
    """Why a place is masked ("site banned", "CE banned"), or "" when it is not."""
    if site_status == BANNED:
        return "site banned"
    if ce_status == BANNED:
        return "CE banned"
    return ""


def change_mask(action: str, *, site_id: int, ce_id: int | None, reason: str, by) -> SiteMaskChange:
    """Ban or allow the site (ce_id None) or one of its CEs, and record it. Raises
    ValidationError naming the field at fault: `action`, `target` (unknown, or already in the
    state asked for) or `reason` (required)."""
    if action not in (BAN, ALLOW):
        raise ValidationError({"action": "Choose ban or allow."})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why: the reason is kept in the mask's history."})
    if len(reason) > 255:
        raise ValidationError({"reason": "At most 255 characters."})
    with transaction.atomic():
        site = Site.objects.select_for_update().filter(pk=site_id).first()
        if site is None:
            raise ValidationError({"target": "No such site."})
        row: Site | ComputingElement = site
        if ce_id is not None:
            ce = ComputingElement.objects.select_for_update().filter(pk=ce_id, site=site).first()
            if ce is None:
                raise ValidationError({"target": f"No such CE at {site.name}."})
            row = ce
        before = row.status
        if action == BAN and before == BANNED:
            raise ValidationError({"target": f"{row.name} is banned already."})
        if action == ALLOW and before != BANNED:
            raise ValidationError({"target": f"{row.name} is not banned ({before})."})
        row.status = BANNED if action == BAN else "active"
        row.save(update_fields=["status"])
        transaction.on_commit(topology.invalidate)  # this process's pilots see it at once
        return SiteMaskChange.objects.create(
            site=site,
            ce_name=row.name if row is not site else "",
            action=action,
            from_status=before,
            reason=reason,
            by=by,
            at=clock.now(),
        )
