from django.urls import path

from web.accounting import views

urlpatterns = [
    path("", views.accounting_page, name="accounting"),
]
