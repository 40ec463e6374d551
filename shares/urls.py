from django.urls import path

from matcher.views_shares import shares_page
from shares import views

# The page composes shares with the matcher's TaskQueues, so its view lives in the matcher;
# the edits are the shares app's own.
urlpatterns = [
    path("", shares_page, name="group-list"),
    path("groups/<int:pk>/", views.group_edit, name="group-edit"),
    path("changes/<int:pk>/revert/", views.change_revert, name="group-change-revert"),
]
