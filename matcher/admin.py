from django.contrib import admin

from matcher.models import ComputingElement, Job, JobStatusHistory, Site, TaskQueue


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
