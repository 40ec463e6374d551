from django import forms

from core import gdpconfig


class ParameterForm(forms.Form):
    """Edit one gdpconfig parameter; the registry validates, and its message names the field."""

    # No length of its own: the registry bounds each parameter (the column its value feeds) and
    # says so naming it; the request body is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE.
    value = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 36}))
    comment = forms.CharField(
        max_length=500,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "why (kept in the history)", "size": 30}),
    )

    def __init__(self, *args, param: gdpconfig.Param, **kwargs):
        super().__init__(*args, **kwargs)
        self.param = param
        if param.kind == gdpconfig.CHOICE:
            self.fields["value"] = forms.ChoiceField(choices=[(c, c) for c in param.choices])
        elif param.kind == gdpconfig.JSON:
            self.fields["value"] = forms.CharField(
                widget=forms.Textarea(attrs={"rows": 14, "cols": 70, "spellcheck": "false"})
            )
        elif param.kind == gdpconfig.BOOL:
            self.fields["value"] = forms.ChoiceField(choices=[("true", "true"), ("false", "false")])

    def clean_value(self):
        raw = self.cleaned_data["value"]
        try:
            return self.param.coerce(raw)
        except gdpconfig.ConfigError as exc:
            raise forms.ValidationError(str(exc)) from None  # names the parameter
