from django.urls import path

from web.classads import views

app_name = "classads"
urlpatterns = [
    path("", views.site_ad_list, name="site-ad-list"),
    path("sites/<int:pk>/", views.site_ad_detail, name="site-ad-detail"),
    path("jobs/", views.job_ad_list, name="job-ad-list"),
    path("jobs/<int:pk>/", views.job_ad_detail, name="job-ad-detail"),
    path("jobs/<int:pk>/release/", views.job_ad_release, name="job-ad-release"),
    path("jobs/<int:pk>/remove/", views.job_ad_remove, name="job-ad-remove"),
    path("negotiation/", views.negotiation, name="negotiation"),
]
