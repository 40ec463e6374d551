from django.contrib import admin

from core.models import CycleRun, ParameterValue
from web.core.login import AdminLoginForm


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
