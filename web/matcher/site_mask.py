"""The site mask page: every site and CE with its status, staff's form to ban or allow one with a
reason (a ban asks first, as every destructive action does), and the mask's history: who, when,
why (matcher.site_mask)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse

from matcher import site_mask
from matcher.models import ComputingElement, Site, SiteMaskChange
from web.core.confirm import confirmation

HISTORY_ROWS = 100


def _targets() -> list[tuple[str, str]]:
    """The form's choices: each site ("site:<id>"), then its CEs ("ce:<id>")."""
    out = []
    ces: dict[int, list[ComputingElement]] = {}
    for ce in ComputingElement.objects.order_by("site__name", "name"):
        ces.setdefault(ce.site_id, []).append(ce)
    for site in Site.objects.order_by("name"):
        out.append((f"site:{site.pk}", f"{site.name} (the whole site, {site.status})"))
        out += [
            (f"ce:{ce.pk}", f"{site.name} / CE {ce.name} ({ce.status})")
            for ce in ces.get(site.pk, ())
        ]
    return out


class MaskForm(forms.Form):
    target = forms.ChoiceField(label="Site or CE")
    action = forms.ChoiceField(choices=SiteMaskChange.Action.choices, widget=forms.RadioSelect)
    reason = forms.CharField(
        max_length=255, help_text="kept in the history: a downtime ticket, a failure seen..."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [("", "choose…"), *_targets()]

    def place(self) -> tuple[int, int | None, str]:
        """(site id, CE id or None, its name) of the chosen target."""
        kind, _, pk = self.cleaned_data["target"].partition(":")
        if kind == "site":
            return int(pk), None, Site.objects.get(pk=pk).name
        ce = ComputingElement.objects.get(pk=pk)
        return ce.site_id, ce.pk, ce.name


def site_mask_page(request):
    form = MaskForm(initial={"action": "ban"})
    if request.method == "POST":
        if not request.user.is_staff:
            raise PermissionDenied("staff only")
        form = MaskForm(request.POST)
        if form.is_valid():
            done = _apply(request, form)
            if done is not None:
                return done
    context = {
        "form": form,
        "sites": Site.objects.prefetch_related("computing_elements").order_by("name"),
        "history": SiteMaskChange.objects.select_related("site", "by")[:HISTORY_ROWS],
        "history_rows": HISTORY_ROWS,
    }
    return render(request, "matcher/site_mask.html", context, status=400 if form.errors else 200)


def _apply(request, form: MaskForm):
    """The change, after the confirmation a ban asks for; None (the errors on the form) when
    refused."""
    site_id, ce_id, name = form.place()
    action = form.cleaned_data["action"]
    if action == site_mask.BAN:
        what = "site" if ce_id is None else "CE"
        page = confirmation(
            request,
            title=f"Ban {name}",
            question=f"Ban the {what} {name}? The director sends it no pilot and the brokerage "
            f"places no job there until it is allowed again.",
            action="Ban",
            back=reverse("site-mask"),
        )
        if page is not None:
            return page
    try:
        site_mask.change_mask(
            action,
            site_id=site_id,
            ce_id=ce_id,
            reason=form.cleaned_data["reason"],
            by=request.user,
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return None
    messages.success(request, f"{name} {'banned' if action == site_mask.BAN else 'allowed'}.")
    return redirect("site-mask")
