from django.urls import path

from web.matcher import search, site_mask, views
from web.matcher.sites import site_detail

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/submit/", views.job_submit, name="job-submit"),
    path("jobs/bulk/", views.job_bulk, name="job-bulk"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/kill/", views.job_kill, name="job-kill"),
    path("jobs/<int:pk>/reschedule/", views.job_reschedule, name="job-reschedule"),
    path("taskqueues/", views.taskqueue_list, name="taskqueue-list"),
    path("taskqueues/<int:pk>/", views.taskqueue_detail, name="taskqueue-detail"),
    path("taskqueues/match/", views.match_resource, name="match-resource"),
    path("sites/", views.site_list, name="site-list"),
    path("sites/mask/", site_mask.site_mask_page, name="site-mask"),
    path("sites/<int:pk>/", site_detail, name="site-detail"),
    path("search/", search.quick_search, name="quick-search"),
]
