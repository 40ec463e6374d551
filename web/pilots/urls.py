from django.urls import path

from web.pilots import views

urlpatterns = [
    path("", views.pilot_list, name="pilot-list"),
    path("<int:pk>/", views.pilot_detail, name="pilot-detail"),
    path("director/", views.director, name="director"),
]
