# PanDA queues, storages, nuclei, tasks and brokerage traces arrive with the brokerage issues.
