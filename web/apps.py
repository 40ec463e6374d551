from django.apps import AppConfig


class WebConfig(AppConfig):
    """The pages: every view, form, chart and template tag of the dashboard
    (docs/developer-guide.md, Layout)."""

    name = "web"
    verbose_name = "Pages"
