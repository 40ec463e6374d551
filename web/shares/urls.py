from django.urls import path

from web.shares import views

# The page's view is the shares' own; the TaskQueues it shows come through web.shares.overview's
# registry, which the matcher fills.
urlpatterns = [
    path("", views.shares_page, name="group-list"),
    path("groups/<int:pk>/", views.group_edit, name="group-edit"),
    path("changes/<int:pk>/revert/", views.change_revert, name="group-change-revert"),
    path("users/<str:username>/", views.user_detail, name="user-detail"),
]
