from django.urls import path

from web.notifications import views

urlpatterns = [
    path("", views.notifications, name="notifications"),
]
