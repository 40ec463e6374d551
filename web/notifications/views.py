"""The notifications page: your default, asking about a job or task, what is pending and
what was sent."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from api.notifications.serializers import RequestSerializer
from notifications import services
from notifications.models import NotificationRequest
from web.notifications.forms import PreferenceForm, RequestForm

SHOWN = 100


class _Request:  # what RequestSerializer reads of the request: its user
    def __init__(self, user):
        self.user = user


def _ask(request, form: RequestForm) -> bool:
    """Create the request through the API's serializer; its errors land on the form."""
    if not form.is_valid():
        return False
    body = RequestSerializer(data=form.api_data(), context={"request": _Request(request.user)})
    try:
        if body.is_valid():
            services.create_request(request.user, dict(body.validated_data))
            return True
        errors_by_field = body.errors
    except ValidationError as exc:  # asked twice at once
        errors_by_field = exc.message_dict
    for field, errors in errors_by_field.items():
        name = "object_id" if field in ("job", "task") else field
        form.add_error(name if name in form.fields else None, errors)
    return False


@require_http_methods(["GET", "POST"])
def notifications(request):
    pref = services.preference_of(request.user)
    pref_form = PreferenceForm(instance=pref)
    initial = {}
    for kind in ("job", "task"):
        if request.GET.get(kind, "").isdigit():
            initial = {"kind": kind, "object_id": int(request.GET[kind])}
    req_form = RequestForm(initial=initial)
    action = request.POST.get("action")
    if action == "preference":
        pref_form = PreferenceForm(request.POST, instance=pref)
        if pref_form.is_valid():
            fields = {f: pref_form.cleaned_data[f] for f in PreferenceForm.Meta.fields}
            services.save_preference(request.user, fields)
            messages.success(request, "Your notification default is saved.")
            return redirect("notifications")
    elif action == "request":
        req_form = RequestForm(request.POST)
        if _ask(request, req_form):
            messages.success(request, "You will be told when it ends.")
            back = request.POST.get("next", "")
            if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
                return redirect(back)  # the job page's one-click button goes back there
            return redirect("notifications")
    elif action == "cancel":
        pk = request.POST.get("request", "")
        own = NotificationRequest.objects.filter(user=request.user, done=False)
        if pk.isdigit() and own.filter(pk=int(pk)).delete()[0]:
            messages.success(request, "Request withdrawn.")
        return redirect("notifications")
    return render(
        request,
        "notifications/notifications.html",
        {
            "pref_form": pref_form,
            "req_form": req_form,
            "pending": services.pending_requests_of(request.user)[:SHOWN],
            "notices": services.notices_of(request.user)[:SHOWN],
            "has_email": bool(request.user.email),
        },
        status=400 if request.method == "POST" else 200,
    )
