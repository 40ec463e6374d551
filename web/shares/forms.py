from django import forms

from matcher.services import groups
from shares.models import GridGroup


def share_text(value: float) -> str:
    """A JobShare as the Shares page writes it, in its table and in its form alike: a whole
    number without ".0" (40000), any other as Python writes it (0.25, 1e+20)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def change_text(value) -> str:
    """A group change's old or new value: a JobShare as share_text writes it, a property as
    it is (True, False)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return share_text(value)
    return str(value)


class GroupShareForm(forms.ModelForm):
    # Declared here, so that the bounds and their sentences are the edit's own
    # (matcher.services.groups), not the model field's validators'.
    job_share = forms.FloatField(
        label="JobShare",
        # No min/max attributes: the bounds are the server's, said beside the field (the
        # browser's own bubble would hide them), and the preview says them as one types.
        widget=forms.TextInput(
            attrs={"inputmode": "decimal", "size": 10, "aria-label": "JobShare"}
        ),
        error_messages={
            "required": "JobShare is required.",
            "invalid": "JobShare must be a number.",
        },
    )
    comment = forms.CharField(
        max_length=255,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "why (optional)", "aria-label": "comment"}),
    )

    class Meta:
        model = GridGroup
        fields = ["job_share", "job_sharing", "generic_pilot"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound and self.instance.pk is not None:
            self.initial["job_share"] = share_text(self.instance.job_share)
        self.fields["job_share"].help_text = f"0 to {groups.JOB_SHARE_MAX:,.0f}"

    @staticmethod
    def prefix_for(group: GridGroup) -> str:
        """The prefix of a group's form on the Shares page (one form per group)."""
        return f"g{group.pk}"

    def clean_job_share(self):
        value = self.cleaned_data["job_share"]
        problem = groups.job_share_problem(value)
        if problem:
            raise forms.ValidationError(problem + ".")
        return value
