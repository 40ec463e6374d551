from django.apps import AppConfig


class ClassAdsConfig(AppConfig):
    name = "classads"
    verbose_name = "Condor-G ClassAd matchmaking"

    def ready(self) -> None:
        # Negotiator semantics first, before any ClassAd is evaluated in this process.
        from classads import semantics

        semantics.enable()
        semantics.self_test()
        from classads import params, services  # noqa: F401  (parameters, cycles)
