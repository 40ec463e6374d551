"""The Django admin over the apps' models, for staff (autodiscovered as the "web" app's admin
module). Each model stays under its own app in the admin's index and URLs (/admin/<app>/<model>/):
registering it here changes neither."""

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from brokerage.models import (
    Dataset,
    GlobalShare,
    NetworkLink,
    Nucleus,
    PandaQueue,
    Replica,
    Storage,
    Task,
    UserQuota,
)
from core.models import CycleRun, ParameterValue
from matcher.models import ComputingElement, Job, JobStatusHistory, Site, TaskQueue
from matcher.services import groups
from shares import services
from shares.models import GridGroup, User
from web.core.login import AdminLoginForm

# --- core: the settings' versions, the cycle runs -------------------------------------------


@admin.register(ParameterValue)
class ParameterValueAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "value", "changed_by", "changed_at", "comment")
    list_filter = ("name",)

    def has_change_permission(self, request, obj=None):
        return False  # values change through the gdpconfig page, which validates and versions


@admin.register(CycleRun)
class CycleRunAdmin(admin.ModelAdmin):
    list_display = ("kind", "started", "finished", "status")
    list_filter = ("kind", "status")


# The admin's own login counts and refuses failed logins as the login page does.
admin.site.login_form = AdminLoginForm


# --- shares: users and groups ----------------------------------------------------------------


class GridGroupAdminForm(forms.ModelForm):
    comment = forms.CharField(
        max_length=255, required=False, help_text="Why: kept in the group's change history."
    )

    class Meta:
        model = GridGroup
        fields = ["name", "description", "job_share", "job_sharing", "generic_pilot"]


def _bounded_job_share(value):
    """JobShare's bounds, as every edit of it keeps them (matcher.services.groups)."""
    problem = groups.job_share_problem(value)
    if problem:
        raise forms.ValidationError(problem + ".")


@admin.register(GridGroup)
class GridGroupAdmin(admin.ModelAdmin):
    """Edits go through the audited service like those of the Shares page and the API: each
    change is recorded (revertible) and the TaskQueue priorities follow."""

    form = GridGroupAdminForm
    list_display = ("name", "job_share", "job_sharing", "generic_pilot", "description")
    list_editable = ("job_share", "job_sharing", "generic_pilot")
    search_fields = ("name",)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "job_share":  # the change form's and the list's alike
            field.validators.append(_bounded_job_share)
        return field

    def save_model(self, request, obj, form, change):
        if not change:
            super().save_model(request, obj, form, change)
            return
        audited = {f: getattr(obj, f) for f in form.changed_data if f in services.EDITABLE}
        others = [f for f in form.changed_data if f not in services.EDITABLE and f != "comment"]
        if others:
            obj.save(update_fields=others)
        comment = form.cleaned_data.get("comment") or "in the admin"
        saved = groups.update_group(obj, audited, request.user, comment)
        for name in audited:
            setattr(obj, name, getattr(saved, name))


@admin.register(User)
class GridUserAdmin(UserAdmin):
    list_display = ("username", "dn", "email", "is_staff")
    search_fields = ("username", "dn", "email")
    filter_horizontal = ("grid_groups", "groups", "user_permissions")
    fieldsets = (*UserAdmin.fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))


# --- matcher: sites, CEs, jobs, TaskQueues ---------------------------------------------------


class ComputingElementInline(admin.TabularInline):
    model = ComputingElement
    extra = 0


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("name", "description")
    search_fields = ("name",)
    inlines = [ComputingElementInline]


@admin.register(ComputingElement)
class ComputingElementAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "ce_type", "status", "cpu_time_limit", "max_waiting_pilots")
    list_filter = ("status", "site")
    search_fields = ("name",)


class HistoryInline(admin.TabularInline):
    model = JobStatusHistory
    extra = 0
    can_delete = False
    readonly_fields = ("at", "from_status", "to_status", "reason")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    # Jobs change state only through the services; the admin shows them read-only.
    list_display = (
        "id",
        "owner",
        "owner_group",
        "status",
        "cpu_time",
        "user_priority",
        "task_queue_id",
    )
    list_filter = ("status",)
    raw_id_fields = ("owner", "owner_group")
    inlines = [HistoryInline]
    show_full_result_count = False

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(TaskQueue)
class TaskQueueAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "owner_group", "setup", "cpu_time", "priority")
    readonly_fields = [f.name for f in TaskQueue._meta.fields]

    def has_add_permission(self, request):
        return False


# --- brokerage: PanDA's topology and tasks ---------------------------------------------------
# Staff edit PanDA's topology in the browser here (and through the API).


@admin.register(Nucleus)
class NucleusAdmin(admin.ModelAdmin):
    list_display = ["name", "site", "state", "bare_nucleus", "transfer_backlog"]
    list_filter = ["state", "bare_nucleus"]


@admin.register(Storage)
class StorageAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "site",
        "nucleus",
        "space_free",
        "space_total",
        "is_tape",
        "blacklisted",
    ]
    list_filter = ["is_tape", "blacklisted", "nucleus"]
    search_fields = ["name"]


@admin.register(PandaQueue)
class PandaQueueAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "site",
        "nucleus",
        "status",
        "queue_type",
        "site_class",
        "core_count",
        "maxrss",
    ]
    list_editable = ["site_class"]
    list_filter = ["status", "queue_type", "site_class", "nucleus"]
    search_fields = ["name", "site__name"]


@admin.register(NetworkLink)
class NetworkLinkAdmin(admin.ModelAdmin):
    list_display = [
        "source",
        "nucleus",
        "queued_files",
        "mbps_1h",
        "mbps_1d",
        "mbps_1w",
        "closeness",
    ]
    list_filter = ["nucleus"]


class ReplicaInline(admin.TabularInline):
    model = Replica
    extra = 1


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "n_files", "size_gb"]
    search_fields = ["name"]
    inlines = [ReplicaInline]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    """Staff classify tasks here; tasks are submitted through the API or the task form."""

    list_display = ["id", "name", "kind", "owner", "gshare", "priority", "task_class", "status"]
    list_editable = ["task_class"]
    list_filter = ["kind", "status", "task_class", "gshare"]
    search_fields = ["name"]
    fields = ["task_class"]

    def has_add_permission(self, request):
        return False


@admin.register(GlobalShare)
class GlobalShareAdmin(admin.ModelAdmin):
    list_display = ["name", "target_pct"]


@admin.register(UserQuota)
class UserQuotaAdmin(admin.ModelAdmin):
    list_display = ["user", "disk_quota_gb", "disk_used_gb"]
