from api.notifications import views

routes = [
    ("notifications", views.NotificationRequestViewSet, "notificationrequest"),
]
