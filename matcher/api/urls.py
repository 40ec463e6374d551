from matcher.api import pilots, shares, views

routes = [
    ("jobs", views.JobViewSet, "job"),
    ("task-queues", views.TaskQueueViewSet, "taskqueue"),
    ("match", views.MatchViewSet, "match"),
    ("shares", shares.SharesViewSet, "shares"),
    ("pilots", pilots.PilotViewSet, "pilot"),
    ("sites", views.SiteViewSet, "site"),
    ("computing-elements", views.ComputingElementViewSet, "computingelement"),
]
