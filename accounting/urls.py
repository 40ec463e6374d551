from django.urls import path

from accounting import views

urlpatterns = [
    path("", views.accounting_page, name="accounting"),
]
