from api.shares import overview, views

routes = [
    ("groups", views.GridGroupViewSet, "gridgroup"),
    ("users", views.UserViewSet, "user"),
    ("shares", overview.SharesViewSet, "shares"),
]
