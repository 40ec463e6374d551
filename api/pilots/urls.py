from api.pilots import views

# The pilots' match first: URLs resolve in this order, and it is the busiest endpoint.
routes = [
    ("match", views.MatchViewSet, "match"),
    ("pilots", views.PilotViewSet, "pilot"),
]

# Actions on another app's collection: a pilot reports on the jobs it was given at
# /jobs/{id}/status/ and /jobs/{id}/heartbeat/ (the project root mixes them in).
extends = {"jobs": views.JobReportsMixin}
