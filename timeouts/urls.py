from django.urls import path

from timeouts import views

# Mounted at brokerage/timeouts/ (config/urls.py), where the page has always been.
urlpatterns = [
    path("", views.timeouts, name="timeouts"),
]
