"""The job lifecycle's one owner: every write of a job's state, status history, TaskQueue
membership and per-priority counts goes through this package (and the claim statement of
matcher/claims.py). Views, viewsets, commands, cycles and the other apps call these and write
no job table themselves (matcher/tests/test_one_job_writer.py checks it).

- moves.py: the mover. One lock order (job row, then membership), each move checked against
  matcher.lifecycle.MOVES, a history row per move, retries on lost races; single jobs
  (`lock_job`, `move_job`) and many (`lock_jobs`, `move_jobs`), new jobs (`insert_jobs`,
  `create_jobs`).
- enqueue.py: the one way into and out of TaskQueues (TaskQueues per definition, membership,
  counts by increments).
- housekeeping.py: what follows a TaskQueue change unwaited: dropping empty TaskQueues, the
  priorities of the groups whose TaskQueues appeared or vanished.
- submission.py: new jobs (a user's submission, a task's jobs, DAG nodes in bulk).
- jobs.py: brokerage's placement and holds, kill and reschedule, pilot reports and
  heartbeats, the retention purge.
- cleanup.py: the repair cycle.
- groups.py: a group's edits (JobShare and properties, recorded by shares.services) with the
  TaskQueue priorities they change.
"""

from matcher.services.cleanup import repair_counts, taskqueue_cleanup
from matcher.services.enqueue import (
    add_to_counts,
    job_definition,
    join_taskqueues,
    leave_taskqueues,
    taskqueues_for,
)
from matcher.services.housekeeping import drop_empty_taskqueues, drop_if_empty
from matcher.services.jobs import (
    BulkOutcome,
    act_on_jobs,
    activate_jobs,
    kill_job,
    purge_jobs,
    record_heartbeat,
    record_heartbeats,
    report_job,
    reschedule_job,
    set_waiting_status,
)
from matcher.services.moves import (
    JobActionError,
    Locked,
    Moved,
    MoveRefused,
    NewJobs,
    NotHeld,
    Step,
    create_jobs,
    lock_job,
    lock_jobs,
    move_job,
    move_jobs,
    retry_on_race,
    timeout_move,
)
from matcher.services.submission import (
    define_jobs,
    enqueue_new_jobs,
    submit_jobs,
)

__all__ = [
    "BulkOutcome",
    "JobActionError",
    "Locked",
    "MoveRefused",
    "Moved",
    "NewJobs",
    "NotHeld",
    "Step",
    "act_on_jobs",
    "activate_jobs",
    "add_to_counts",
    "create_jobs",
    "define_jobs",
    "drop_empty_taskqueues",
    "drop_if_empty",
    "enqueue_new_jobs",
    "job_definition",
    "join_taskqueues",
    "kill_job",
    "leave_taskqueues",
    "lock_job",
    "lock_jobs",
    "move_job",
    "move_jobs",
    "purge_jobs",
    "record_heartbeat",
    "record_heartbeats",
    "repair_counts",
    "report_job",
    "reschedule_job",
    "retry_on_race",
    "set_waiting_status",
    "submit_jobs",
    "taskqueue_cleanup",
    "taskqueues_for",
    "timeout_move",
]
