from django.urls import path

from web.timeouts import views

# Mounted at brokerage/timeouts/ (gridwms/urls.py), where the page has always been.
urlpatterns = [
    path("", views.timeouts, name="timeouts"),
    path("actions/", views.action_list, name="timeout-actions"),
]
