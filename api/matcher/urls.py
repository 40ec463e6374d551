from api.matcher import views

routes = [
    ("jobs", views.JobViewSet, "job"),
    ("task-queues", views.TaskQueueViewSet, "taskqueue"),
    ("sites", views.SiteViewSet, "site"),
    ("computing-elements", views.ComputingElementViewSet, "computingelement"),
]
