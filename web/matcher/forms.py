import shlex

from django import forms

from core import gdpconfig
from matcher.models import ComputingElement, Site

LIST_HELP = "Comma-separated; empty means no restriction."


def _default_setup(field: forms.Field) -> None:
    """One Setup for the grid: the DefaultSetup parameter, named with its current value."""
    value = gdpconfig.get("DefaultSetup")
    field.help_text = f"Empty: {value}, the grid's Setup (the DefaultSetup parameter)."
    field.widget.attrs["placeholder"] = value


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (Django's documented pattern): a list, maybe empty."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        one = super().clean
        if isinstance(data, list | tuple):
            return [one(d, initial) for d in data if d]
        return [one(data, initial)] if data else []


class JobSubmitForm(forms.Form):
    """The web form's fields; validation itself is the API's (JobSubmitSerializer)."""

    name = forms.CharField(max_length=128, required=False)
    owner_group = forms.ChoiceField(label="Group")
    setup = forms.CharField(max_length=64, required=False)
    cpu_time = forms.IntegerField(label="CPU time (s)", min_value=1)
    user_priority = forms.IntegerField(label="UserPriority", min_value=0, max_value=10, initial=1)
    sites = forms.MultipleChoiceField(required=False, help_text="None selected: any site.")
    banned_sites = forms.MultipleChoiceField(required=False)
    grid_ces = forms.MultipleChoiceField(label="Grid CEs", required=False)
    platforms = forms.CharField(required=False, help_text=LIST_HELP)
    tags = forms.CharField(required=False, help_text=LIST_HELP)
    submit_pools = forms.CharField(required=False, help_text=LIST_HELP)
    pilot_types = forms.CharField(required=False, help_text=LIST_HELP)
    grid_middlewares = forms.CharField(required=False, help_text=LIST_HELP)
    # What it runs (not requirements): the API checks them as it checks the JSON fields.
    executable = forms.CharField(
        max_length=1024,
        required=False,
        strip=False,
        help_text="A path or a command name, e.g. /bin/echo; empty: nothing to run.",
    )
    arguments = forms.CharField(
        required=False,
        strip=False,
        help_text="Split as a shell would, without expanding anything: a 'b c' is two.",
    )
    environment = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="One NAME=value per line.",
    )
    input_sandbox = MultipleFileField(
        required=False,
        help_text="Files put in the payload's working directory (several may be chosen).",
    )
    output_sandbox = forms.CharField(
        required=False,
        help_text="Comma-separated file names or glob patterns to bring back (stdout and "
        "stderr always are).",
    )

    TEXT_LISTS = (
        "platforms",
        "tags",
        "submit_pools",
        "pilot_types",
        "grid_middlewares",
        "output_sandbox",
    )

    def clean_environment(self):
        out = {}
        for number, line in enumerate((self.cleaned_data.get("environment") or "").splitlines()):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep or not name.strip():
                raise forms.ValidationError(f"Line {number + 1} is not NAME=value.")
            out[name.strip()] = value
        return out

    def clean_arguments(self):
        try:
            return shlex.split(self.cleaned_data.get("arguments") or "")
        except ValueError as exc:
            raise forms.ValidationError(f"Cannot be split into arguments ({exc}).") from None

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        _default_setup(self.fields["setup"])
        self.fields["owner_group"].choices = [(g.name, g.name) for g in user.grid_groups.all()]
        site_choices = [(n, n) for n in Site.objects.values_list("name", flat=True)]
        self.fields["sites"].choices = site_choices
        self.fields["banned_sites"].choices = site_choices
        self.fields["grid_ces"].choices = [
            (n, n) for n in ComputingElement.objects.values_list("name", flat=True)
        ]

    def payload(self) -> dict:
        """The job as the API takes it (the input files apart: `files`)."""
        data = dict(self.cleaned_data)
        data.pop("input_sandbox", None)
        for key in self.TEXT_LISTS:
            data[key] = _split(data.get(key) or "")
        if not data.get("setup"):
            data.pop("setup", None)
        return data


class JDLForm(forms.Form):
    jdl = forms.CharField(
        label="JDL",
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        help_text='DIRAC JDL in ClassAd syntax, e.g. CPUTime = 3600; Site = {"LCG.CERN.ch"};',
    )

    def clean_jdl(self):
        # Stored with the job: bounded before anything parses it (the MaxJDLBytes parameter).
        text = self.cleaned_data["jdl"]
        size, limit = len(text.encode()), gdpconfig.get("MaxJDLBytes")
        if size > limit:
            raise forms.ValidationError(
                f"The JDL is {size} bytes; at most {limit} (the MaxJDLBytes parameter)."
            )
        return text


class JDLFilesForm(forms.Form):
    """The files a pasted JDL's InputSandbox names."""

    input_sandbox = MultipleFileField(required=False, help_text="The files its InputSandbox names.")


class ResourceForm(forms.Form):
    """A resource description as a pilot would present it (the match page)."""

    site = forms.ChoiceField(help_text='"any" matches every site restriction')
    grid_ce = forms.ChoiceField(label="Grid CE", required=False)
    setup = forms.CharField(required=False)
    cpu_time = forms.IntegerField(label="CPU time (s)", min_value=0, initial=86400)
    platform = forms.CharField(required=False, help_text=LIST_HELP)
    tag = forms.CharField(required=False, help_text=LIST_HELP)
    pilot_type = forms.CharField(required=False)
    owner_group = forms.CharField(required=False, help_text="A private pilot's group")
    owner_dn = forms.CharField(label="Owner DN", required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _default_setup(self.fields["setup"])
        sites = list(Site.objects.values_list("name", flat=True))
        self.fields["site"].choices = [("any", "any"), *[(s, s) for s in sites]]
        ces = list(ComputingElement.objects.values_list("name", flat=True))
        self.fields["grid_ce"].choices = [("", "—"), ("any", "any"), *[(c, c) for c in ces]]

    def payload(self) -> dict:
        data = {k: v for k, v in self.cleaned_data.items() if v not in ("", None)}
        for key in ("platform", "tag"):
            if key in data:
                data[key] = _split(data[key])
        return data
