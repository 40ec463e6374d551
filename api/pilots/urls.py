from api.pilots import views

# The pilots' match first: URLs resolve in this order, and it is the busiest endpoint.
routes = [
    ("match", views.MatchViewSet, "match"),
    ("pilots", views.PilotViewSet, "pilot"),
]
