"""Brokerage operations, a module per concept: `submission` (a task and its jobs), `world` (what
the pure brokers read: queues with their counts, nuclei, links, replicas, parameters),
`placement` (writing down a cycle's decisions), `production` (the task- and job-brokerage
cycles) and `analysis` (the analysis brokerage cycle)."""

# matcher's tests submit tasks as brokerage.services.submit_task.
from brokerage.services.submission import submit_task as submit_task
