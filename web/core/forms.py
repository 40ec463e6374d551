from django import forms

from core import gdpconfig

# The compact page (templates/config/parameters.html): one row per parameter, inputs sized to it.
_VALUE_ATTRS = {"size": 12, "class": "p-input"}


class ParameterForm(forms.Form):
    """Edit one gdpconfig parameter; the registry validates, and its message names the field.

    A family's form (DISK_THRESHOLD_<gshare>) also takes the member's suffix, posted as `suffix`.
    """

    # No length of its own: the registry bounds each parameter (the column its value feeds) and
    # says so naming it; the request body is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE.
    value = forms.CharField(required=False, widget=forms.TextInput(attrs=_VALUE_ATTRS))
    comment = forms.CharField(
        max_length=500,
        required=False,
        widget=forms.TextInput(
            attrs={"placeholder": "why? (history)", "size": 12, "class": "p-comment"}
        ),
    )

    def __init__(self, *args, param: gdpconfig.Param, **kwargs):
        super().__init__(*args, **kwargs)
        self.param = param
        if param.kind == gdpconfig.CHOICE:
            self.fields["value"] = forms.ChoiceField(choices=[(c, c) for c in param.choices])
        elif param.kind == gdpconfig.JSON:
            self.fields["value"] = forms.CharField(
                widget=forms.Textarea(
                    attrs={"rows": 2, "cols": 30, "spellcheck": "false", "class": "p-input"}
                )
            )
        elif param.kind == gdpconfig.BOOL:
            self.fields["value"] = forms.ChoiceField(choices=[("true", "true"), ("false", "false")])
        if param.family:
            what = param.name[len(param.prefix) :].strip("<>")
            self.fields["suffix"] = forms.CharField(
                required=False,
                widget=forms.TextInput(
                    attrs={
                        "id": f"id_{param.name}-suffix",
                        "placeholder": f"{what}, e.g. Express",
                        "size": 12,
                        "maxlength": 64,
                        "aria-label": f"the {what} part of {param.name}",
                    }
                ),
            )
        self.fields["value"].widget.attrs["aria-label"] = f"new value of {param.name}"
        self.fields["comment"].widget.attrs["aria-label"] = f"why {param.name} changes"

    def add_prefix(self, field_name):
        # A family's suffix keeps its plain name (the page and its tests post `suffix`).
        return field_name if field_name == "suffix" else super().add_prefix(field_name)

    def clean_value(self):
        raw = self.cleaned_data["value"]
        try:
            return self.param.coerce(raw)
        except gdpconfig.ConfigError as exc:
            raise forms.ValidationError(str(exc)) from None  # names the parameter

    def clean_suffix(self):
        suffix = self.cleaned_data["suffix"]
        problem = gdpconfig.suffix_problem(self.param, suffix)
        if problem:
            raise forms.ValidationError(f"{self.param.name}: {problem}")
        return suffix

    def refused(self):
        """Mark the refused fields: the first gets the focus when the page comes back."""
        first = True
        for name in self.errors:
            bound = self[name] if name in self.fields else self["value"]
            field = bound.field
            field.widget.attrs["aria-invalid"] = "true"
            field.widget.attrs["aria-describedby"] = f"{bound.id_for_label}-error"
            if first:
                field.widget.attrs["autofocus"] = True
                first = False
