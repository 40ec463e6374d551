from django.urls import path

from web.core import views

urlpatterns = [
    path("", views.parameters, name="parameters"),
    path("<str:name>/rollback/<int:version>/", views.parameter_rollback, name="parameter-rollback"),
    path("<str:name>/reset/", views.parameter_reset, name="parameter-reset"),
    path("cycles/", views.cycle_runs, name="cycle-runs"),
]
