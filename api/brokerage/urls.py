from api.brokerage import views

routes = [
    ("tasks", views.TaskViewSet, "task"),
    ("brokerage-runs", views.BrokerageRunViewSet, "brokeragerun"),
    ("nuclei", views.NucleusViewSet, "nucleus"),
    ("storages", views.StorageViewSet, "storage"),
    ("panda-queues", views.PandaQueueViewSet, "pandaqueue"),
    ("network-links", views.NetworkLinkViewSet, "networklink"),
    ("datasets", views.DatasetViewSet, "dataset"),
    ("global-shares", views.GlobalShareViewSet, "globalshare"),
    ("user-quotas", views.UserQuotaViewSet, "userquota"),
]
