from notifications.api import views

routes = [
    ("notifications", views.NotificationRequestViewSet, "notificationrequest"),
]
