from django.apps import AppConfig


class SandboxesConfig(AppConfig):
    name = "sandboxes"
    verbose_name = "Job sandboxes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The parameters and the input manifest the pilots' match answer and the job's API show
        # register themselves with the apps below.
        from sandboxes import params, services  # noqa: F401
