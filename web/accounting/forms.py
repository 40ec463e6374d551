from django import forms

from accounting.report import GROUPINGS, WINDOWS


class AccountingForm(forms.Form):
    """The page's and the API's window and grouping (one set of rules)."""

    hours = forms.TypedChoiceField(
        label="window",
        choices=list(WINDOWS.items()),
        coerce=int,
        required=False,
        empty_value=24,
    )
    group_by = forms.ChoiceField(
        label="by",
        choices=[(g, g) for g in GROUPINGS],
        required=False,
    )

    def clean_group_by(self):
        return self.cleaned_data.get("group_by") or "group"
