from shares.api import views

routes = [
    ("groups", views.GridGroupViewSet, "gridgroup"),
    ("users", views.UserViewSet, "user"),
]
