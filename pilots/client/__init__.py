"""The pilot client's machinery, standard library only (no Django): it runs on a worker node.

- `transport`: HTTP to gridwms (JSON POSTs, file downloads, streamed multipart uploads), each
  retried with a growing pause on a server error or a lost connection.
- `sandbox`: the working directory's files: the output tail sent with heartbeats, the
  application status line, the output sandbox patterns resolved safely inside the directory.
- `payload`: one job's payload from the match answer to its final status report.

`manage.py pilot` (pilots/management/commands/pilot.py) is only the entry point.
"""
