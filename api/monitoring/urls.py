from api.monitoring import views

routes = [
    ("monitoring/job-summary", views.JobSummaryViewSet, "monitoring-job-summary"),
    ("monitoring/held-back", views.HeldBackViewSet, "monitoring-held-back"),
    ("monitoring/pilot-summary", views.PilotSummaryViewSet, "monitoring-pilot-summary"),
    ("monitoring/errors", views.ErrorSummaryViewSet, "monitoring-errors"),
]
