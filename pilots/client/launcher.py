"""The payload is started by a small launcher, so that what it uses is measured as its own.
Standard library only.

A process's `ru_maxrss` starts at the memory high-water mark of the process it was forked from:
the kernel carries the replaced image's mark across `exec`. Started by the pilot itself (over
100 MB once it runs), every payload would report at least the pilot's size. So the pilot
starts this launcher (`python -I -S`, a few MB) as the leader of a new process group; the
launcher forks and execs the payload, waits for it with `wait4` and writes on a pipe:

    started <pid>                 the payload runs (its exec succeeded)
    failed <errno> <text>         its exec failed (the payload never ran)
    usage <maxrss kB> <cpu s>     it ended: its own use and that of the descendants it waited for

then ends as the payload did (the same exit code, or killed by the same signal). SIGTERM,
SIGINT and SIGHUP do not stop the launcher (it reports the payload's end, which they reach as
the group's members); only SIGKILL does, and then no usage is written.
"""

from __future__ import annotations

import os
import subprocess
import sys

SOURCE = r"""
import os, signal, sys
out, executable, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda *_: None)  # caught, not ignored: exec resets it for the payload
r, w = os.pipe()  # close-on-exec: EOF once the payload's exec succeeded
pid = os.fork()
if pid == 0:
    os.close(r)
    os.close(out)  # the payload's descendants must not hold the pipe open
    try:
        os.execv(executable, argv)
    except OSError as exc:
        os.write(w, ("%d %s" % (exc.errno or 0, exc.strerror or exc)).encode())
    os._exit(127)
os.close(w)
failed = os.read(r, 4096)
os.close(r)
if failed:
    os.waitpid(pid, 0)
    os.write(out, b"failed " + failed + b"\n")
    os._exit(127)
os.write(out, b"started %d\n" % pid)
_, status, ru = os.wait4(pid, 0)
os.write(out, b"usage %d %.6f\n" % (ru.ru_maxrss, ru.ru_utime + ru.ru_stime))
os.close(out)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


class Launched:
    """The launcher's messages, read from its pipe."""

    def __init__(self, proc: subprocess.Popen, reader):
        self.proc = proc
        self._reader = reader
        self.payload_pid: int | None = None
        self.failure: tuple[int, str] | None = None  # (errno, text) when the exec failed
        self.maxrss: int | None = None
        self.cpu: float | None = None

    @classmethod
    def start(cls, executable: str, argv: list[str], **popen) -> Launched:
        """Start the launcher for the payload (Popen's keywords: cwd, env, stdout...) and wait
        until the payload's exec succeeded or failed."""
        r, w = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", SOURCE, str(w), executable, *argv],
                pass_fds=(w,),
                **popen,
            )
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        launched = cls(proc, os.fdopen(r, "rb"))
        launched._read_one()
        return launched

    def _read_one(self) -> bool:
        line = self._reader.readline()
        if not line:
            return False
        word, _, rest = line.decode(errors="replace").strip().partition(" ")
        try:
            if word == "started":
                self.payload_pid = int(rest)
            elif word == "failed":
                code, _, text = rest.partition(" ")
                self.failure = (int(code), text)
            elif word == "usage":
                maxrss, cpu = rest.split()
                self.maxrss, self.cpu = int(maxrss), float(cpu)
        except ValueError:
            pass
        return True

    def finish(self) -> None:
        """Read the usage line, once the launcher has ended (EOF otherwise)."""
        while self.maxrss is None and self._read_one():
            pass
        self._reader.close()
