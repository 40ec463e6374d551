"""PanDA's pilot protocol (views.py), at panda-server's own paths."""

from django.urls import path, re_path

from api.panda_pilot import views

QUEUE = r"(?P<queue>[A-Za-z0-9_.+-]{1,128})"

urlpatterns = [
    path("server/panda/getJob", views.GetJobView.as_view(), name="panda-getjob"),
    path("server/panda/updateJob", views.UpdateJobView.as_view(), name="panda-updatejob"),
    path("server/panda/getStatus", views.GetStatusView.as_view(), name="panda-getstatus"),
    re_path(
        rf"^cache/schedconfig/{QUEUE}\.all\.json$",
        views.QueueDataView.as_view(),
        name="panda-queuedata",
    ),
    re_path(rf"^cache/schedconfig/{QUEUE}\.json$", views.QueuesView.as_view(), name="panda-queues"),
    path("cache/ddmendpoints.json", views.StoragesView.as_view(), name="panda-storages"),
]
