from config.api import views

# The base app's own API routes; the project root composes every app's (gridwms/api_urls.py).
routes = [
    ("config", views.ParameterViewSet, "parameter"),
    ("cycles", views.CycleRunViewSet, "cyclerun"),
]
