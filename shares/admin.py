from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from shares import services
from shares.models import GridGroup, User


class GridGroupAdminForm(forms.ModelForm):
    comment = forms.CharField(
        max_length=255, required=False, help_text="Why: kept in the group's change history."
    )

    class Meta:
        model = GridGroup
        fields = ["name", "description", "job_share", "job_sharing", "generic_pilot"]


@admin.register(GridGroup)
class GridGroupAdmin(admin.ModelAdmin):
    """Edits go through the audited service like those of the Shares page and the API: each
    change is recorded (revertible) and the TaskQueue priorities follow."""

    form = GridGroupAdminForm
    list_display = ("name", "job_share", "job_sharing", "generic_pilot", "description")
    list_editable = ("job_share", "job_sharing", "generic_pilot")
    search_fields = ("name",)

    def save_model(self, request, obj, form, change):
        if not change:
            super().save_model(request, obj, form, change)
            return
        audited = {f: getattr(obj, f) for f in form.changed_data if f in services.EDITABLE}
        others = [f for f in form.changed_data if f not in services.EDITABLE and f != "comment"]
        if others:
            obj.save(update_fields=others)
        comment = form.cleaned_data.get("comment") or "in the admin"
        saved = services.update_group(obj, audited, request.user, comment)
        for name in audited:
            setattr(obj, name, getattr(saved, name))


@admin.register(User)
class GridUserAdmin(UserAdmin):
    list_display = ("username", "dn", "email", "is_staff")
    search_fields = ("username", "dn", "email")
    filter_horizontal = ("grid_groups", "groups", "user_permissions")
    fieldsets = (*UserAdmin.fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Grid identity", {"fields": ("dn", "grid_groups")}))
