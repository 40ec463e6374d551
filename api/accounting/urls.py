from api.accounting import views

routes = [
    ("accounting", views.AccountingViewSet, "accounting"),
]
