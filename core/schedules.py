"""The schedules of the background cycles, in minutes. Apps add theirs here as they come."""

SCHEDULES = {
    "taskqueue_cleanup": 5,
    "priorities": 2,
    "usage_sampling": 1,
    "director": 1,
    "pilot_status": 1,
    "task_brokerage": 10,
    "job_brokerage": 1,
    "analysis_brokerage": 1,
    "negotiator": 1,
    "matchmaker_monitor": 2,
    "timeouts": 5,
    "task_completion": 1,
    "retention": 10,
    "notifications": 1,
    "accounting": 1,
    "job_counts": 1,
}
