"""Staff edit PanDA's topology in the browser here (and through the API)."""

from django.contrib import admin

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
