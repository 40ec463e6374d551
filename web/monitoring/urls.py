from django.urls import path

from web.monitoring import views

app_name = "monitoring"
urlpatterns = [
    path("", views.index, name="index"),
    path("jobs/", views.jobs, name="job-summary"),
    path("held/", views.held, name="held-back"),
    path("pilots/", views.pilots, name="pilot-summary"),
    path("errors/", views.errors, name="error-summary"),
]
