from api.timeouts import views

routes = [
    ("timeout-actions", views.TimeoutActionViewSet, "timeoutaction"),
]
