from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from shares.models import GridGroup, User


@admin.register(GridGroup)
class GridGroupAdmin(admin.ModelAdmin):
    list_display = ("name", "job_share", "job_sharing", "generic_pilot", "description")
    list_editable = ("job_share", "job_sharing", "generic_pilot")
    search_fields = ("name",)


@admin.register(User)
class GridUserAdmin(UserAdmin):
    list_display = ("username", "dn", "email", "is_staff")
    search_fields = ("username", "dn", "email")
    filter_horizontal = ("grid_groups", "groups", "user_permissions")
    fieldsets = (*UserAdmin.fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))
