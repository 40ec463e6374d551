"""Staff edit PanDA's topology in the browser here (and through the API)."""

from django.contrib import admin

from brokerage.models import Dataset, NetworkLink, Nucleus, PandaQueue, Replica, Storage


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
    list_display = ["name", "site", "nucleus", "status", "queue_type", "core_count", "maxrss"]
    list_filter = ["status", "queue_type", "nucleus"]
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
