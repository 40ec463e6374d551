from django.urls import path

from web.brokerage import views

urlpatterns = [
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/submit/", views.task_submit, name="task-submit"),
    path("tasks/<int:pk>/", views.task_detail, name="task-detail"),
    path("tasks/<int:pk>/kill/", views.task_kill, name="task-kill"),
    path("tasks/<int:pk>/retry/", views.task_retry, name="task-retry"),
    path("decisions/", views.decision_list, name="decision-list"),
    path("queues/", views.queue_weights, name="queue-weights"),
    path("nuclei/", views.nucleus_list, name="nucleus-list"),
    path("analysis/", views.analysis_user, name="analysis-user"),
    path("nuclei/<int:pk>/", views.nucleus_detail, name="nucleus-detail"),
]
