from matcher.api import views

routes = [
    ("jobs", views.JobViewSet, "job"),
    ("task-queues", views.TaskQueueViewSet, "taskqueue"),
    ("match", views.MatchViewSet, "match"),
    ("sites", views.SiteViewSet, "site"),
    ("computing-elements", views.ComputingElementViewSet, "computingelement"),
]
