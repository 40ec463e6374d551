from accounting.api import views

routes = [
    ("accounting", views.AccountingViewSet, "accounting"),
]
