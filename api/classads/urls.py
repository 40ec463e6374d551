from api.classads import views

routes = [
    ("classads/sites", views.SiteAdViewSet, "sitead"),
    ("classads/jobs", views.JobAdViewSet, "jobad"),
]
