from timeouts.api import views

routes = [
    ("timeout-actions", views.TimeoutActionViewSet, "timeoutaction"),
]
