"""Destructive actions ask first (kill a job, revert a JobShare change, roll a parameter back,
pause the simulated clock).

The page's form carries `data-confirm`: a script asks in a dialog and posts with confirm=yes.
The view asks again on a page of its own when confirm=yes is missing (no script, a stale tab, a
hand-made POST), so nothing is destroyed without a yes.
"""

from django.shortcuts import render

CONFIRM_FIELD = "confirm"
_NOT_REPOSTED = {CONFIRM_FIELD, "csrfmiddlewaretoken"}


def confirmation(request, *, title: str, question: str, action: str, back: str):
    """None when the POST says yes; otherwise the page that asks, whose button posts the same
    fields again with confirm=yes and whose Cancel goes `back`."""
    if request.POST.get(CONFIRM_FIELD) == "yes":
        return None
    fields = [(k, v) for k, vs in request.POST.lists() for v in vs if k not in _NOT_REPOSTED]
    context = {"title": title, "question": question, "action": action, "back": back}
    return render(request, "confirm.html", {**context, "fields": fields})
