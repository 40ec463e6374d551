from django import forms

from shares.models import GridGroup


class GroupShareForm(forms.ModelForm):
    comment = forms.CharField(
        max_length=255,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "why (optional)", "aria-label": "comment"}),
    )

    class Meta:
        model = GridGroup
        fields = ["job_share", "job_sharing", "generic_pilot"]
        labels = {"job_share": "JobShare"}
        widgets = {
            "job_share": forms.NumberInput(
                attrs={"step": "any", "min": 0, "size": 8, "aria-label": "JobShare"}
            )
        }

    @staticmethod
    def prefix_for(group: GridGroup) -> str:
        """The prefix of a group's form on the Shares page (one form per group)."""
        return f"g{group.pk}"

    def clean_job_share(self):
        value = self.cleaned_data["job_share"]
        if value is None or value < 0:
            raise forms.ValidationError("JobShare must be a number ≥ 0.")
        return value
