from django.urls import path

from shares import views

urlpatterns = [path("", views.group_list, name="group-list")]
