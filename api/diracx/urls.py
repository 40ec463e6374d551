"""DiracX's paths, at the root as DiracX's clients ask for them (gridwms/urls.py includes these
before the pages). DRF's views answer for themselves (401 to a client without credentials), so
the login wall lets them through; discovery answers anyone."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from api.diracx import views

urlpatterns = [
    path(
        ".well-known/openid-configuration",
        login_not_required(views.OpenIDConfigurationView.as_view()),
        name="diracx-openid-configuration",
    ),
    path("api/auth/userinfo", views.UserInfoView.as_view(), name="diracx-userinfo"),
    path("api/jobs/jdl", views.SubmitJDLView.as_view(), name="diracx-submit-jdl"),
    path("api/jobs/search", views.SearchView.as_view(), name="diracx-search"),
    path("api/jobs/summary", views.SummaryView.as_view(), name="diracx-summary"),
    path("api/jobs/status", views.JobStatusView.as_view(), name="diracx-status"),
]
