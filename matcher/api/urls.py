from matcher.api import pilots, views

# The pilots' match first: URLs resolve in this order, and it is the busiest endpoint.
routes = [
    ("match", views.MatchViewSet, "match"),
    ("jobs", views.JobViewSet, "job"),
    ("task-queues", views.TaskQueueViewSet, "taskqueue"),
    ("pilots", pilots.PilotViewSet, "pilot"),
    ("sites", views.SiteViewSet, "site"),
    ("computing-elements", views.ComputingElementViewSet, "computingelement"),
]
