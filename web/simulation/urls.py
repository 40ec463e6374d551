from django.urls import path

from web.simulation import views

urlpatterns = [
    path("", views.clock_page, name="simulation-clock"),
    path("clock/", views.clock_action, name="simulation-clock-action"),
]
