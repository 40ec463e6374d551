"""PanDA's job API beside gridwms's router under /api/v1/ (gridwms/urls.py includes it first).
PanDA's paths have no trailing slash (pandaclient posts to them as they are); gridwms's own
routes are plural (jobs/) and end in one, so none of these can shadow them."""

from django.urls import path

from api.panda_client import views

urlpatterns = [
    path("job/submit", views.SubmitView.as_view(), name="panda-job-submit"),
    path("job/get_description", views.DescriptionView.as_view(), name="panda-job-description"),
    path("job/kill", views.KillView.as_view(), name="panda-job-kill"),
    path("system/is_alive", views.IsAliveView.as_view(), name="panda-is-alive"),
]
