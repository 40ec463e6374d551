from django import forms

from api.notifications.serializers import NO_ADDRESS
from notifications.models import Channel, NotificationPreference, Outcomes


class PreferenceForm(forms.ModelForm):
    prefix = "pref"

    class Meta:
        model = NotificationPreference
        fields = ["email", "webhook_url", "outcomes", "scope"]
        widgets = {"webhook_url": forms.URLInput(attrs={"size": 50, "placeholder": "https://"})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A form without the field (an older page, a script) keeps the scope as it is.
        self.fields["scope"].required = False

    def clean_scope(self):
        return self.cleaned_data["scope"] or self.instance.scope

    def clean_email(self):
        if self.cleaned_data["email"] and not self.instance.user.email:
            raise forms.ValidationError(NO_ADDRESS)
        return self.cleaned_data["email"]


class RequestForm(forms.Form):
    """Ask about one job or task; checked by the API's serializer (one set of rules)."""

    prefix = "req"
    kind = forms.ChoiceField(choices=[("job", "job"), ("task", "task")])
    object_id = forms.IntegerField(label="id", min_value=1, max_value=2**63 - 1)
    channels = forms.MultipleChoiceField(
        choices=Channel.choices, widget=forms.CheckboxSelectMultiple, initial=[Channel.EMAIL]
    )
    outcomes = forms.ChoiceField(choices=Outcomes.choices, initial=Outcomes.BOTH)
    webhook_url = forms.CharField(
        label="webhook URL",
        required=False,
        max_length=500,
        widget=forms.URLInput(attrs={"size": 40, "placeholder": "empty: your preference's"}),
    )

    def api_data(self) -> dict:
        d = self.cleaned_data
        return {
            d["kind"]: d["object_id"],
            "channels": d["channels"],
            "outcomes": d["outcomes"],
            "webhook_url": d["webhook_url"],
        }
