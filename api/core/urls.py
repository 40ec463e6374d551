from api.core import views

# The base app's own API routes; the project root composes every app's (api/urls.py).
routes = [
    ("config", views.ParameterViewSet, "parameter"),
    ("cycles", views.CycleRunViewSet, "cyclerun"),
]
