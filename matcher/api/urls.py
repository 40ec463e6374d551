from matcher.api import shares, views

routes = [
    ("jobs", views.JobViewSet, "job"),
    ("task-queues", views.TaskQueueViewSet, "taskqueue"),
    ("match", views.MatchViewSet, "match"),
    ("shares", shares.SharesViewSet, "shares"),
    ("sites", views.SiteViewSet, "site"),
    ("computing-elements", views.ComputingElementViewSet, "computingelement"),
]
