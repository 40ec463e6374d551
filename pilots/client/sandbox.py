"""The payload's working directory, read safely: the output tail, the application status line,
the output sandbox, and the names that may become files in it.

The application status convention: a line of the payload's stdout that starts (at the very
start of the line) with `APPLICATION_STATUS:`; the text after the colon, stripped of surrounding
whitespace and cut to 255 characters, is the job's application status. The last such line wins,
so a payload may print one as each stage starts. (DIRAC payloads set it through a call; ours
print it.)
"""

from __future__ import annotations

import glob
import os
import stat

TAIL_BYTES = 4096
STATUS_PREFIX = b"APPLICATION_STATUS:"
STATUS_CHARS = 255
_LINE_CHUNK = 64 * 1024


def output_tail(path: str, limit: int = TAIL_BYTES) -> str:
    """The last lines of a file: at most `limit` bytes once encoded as UTF-8, undecodable
    bytes replaced; a line cut by the limit is left out when a whole line follows it."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            raw = f.read(limit)
    except OSError:
        return ""
    text = raw.decode("utf-8", errors="replace")
    encoded = text.encode()
    cut = size > limit
    if len(encoded) > limit:  # a replaced byte takes three bytes once encoded
        text = encoded[-limit:].decode("utf-8", errors="ignore")
        cut = True
    if cut and "\n" in text[:-1]:
        text = text[text.index("\n") + 1 :]
    return text


def application_status(path: str) -> str | None:
    """The text of stdout's last `APPLICATION_STATUS:` line (see the module's docstring), read
    line by line in bounded pieces, so a huge file or a line without end costs no memory."""
    found = None
    at_line_start = True
    try:
        with open(path, "rb") as f:
            for piece in iter(lambda: f.readline(_LINE_CHUNK), b""):
                if at_line_start and piece.startswith(STATUS_PREFIX):
                    found = piece[len(STATUS_PREFIX) : len(STATUS_PREFIX) + 4 * STATUS_CHARS]
                at_line_start = piece.endswith(b"\n")
    except OSError:
        return None
    if found is None:
        return None
    return found.decode("utf-8", errors="replace").strip()[:STATUS_CHARS]


def plain_name(name: object) -> bool:
    """A plain base name: a file directly in the working directory, nothing more."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 255
        and name not in (".", "..")
        and not any(c in name for c in "/\\\0")
    )


def safe_pattern(pattern: object) -> bool:
    """An output sandbox pattern that stays inside the working directory: relative, without a
    `..` component, without NUL."""
    if not isinstance(pattern, str) or not pattern or "\0" in pattern:
        return False
    if pattern.startswith(("/", "\\")) or os.path.isabs(pattern):
        return False
    return ".." not in pattern.replace("\\", "/").split("/")


def inside(root: str, path: str) -> bool:
    """Whether `path`, every symbolic link resolved, lies inside `root` (itself resolved)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real != real_root and os.path.commonpath([real_root, real]) == real_root


def output_files(workdir: str, patterns: list, skip: set[str], log=None) -> list[str]:
    """The files (relative names, sorted, each once) that the output sandbox patterns match in
    the working directory: regular files only, whose real path (links resolved, the directories
    on the way included) is inside the directory. `skip` names files left out (stdout, stderr).
    Patterns are globs, not recursive (`**` is `*`); a pattern that might leave is ignored."""
    found: set[str] = set()
    for pattern in patterns:
        if not safe_pattern(pattern):
            _say(log, f"output sandbox: pattern {pattern!r} ignored (it could leave the directory)")
            continue
        for rel in glob.glob(pattern, root_dir=workdir):
            rel = os.path.normpath(rel)
            if rel in skip or rel in found:
                continue
            full = os.path.join(workdir, rel)
            if not _regular_file(full):
                continue
            if not inside(workdir, full):
                _say(log, f"output sandbox: {rel!r} skipped (it points outside the directory)")
                continue
            found.add(rel)
    return sorted(found)


def _regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _say(log, message: str) -> None:
    if log is not None:
        log(message)


# --- outputs over the server's limit -------------------------------------------------------------

# A cut stream keeps its head and tail joined by this line (the sizes at their widest).
CUT_MARK = "\n[gridwms pilot: {cut} of this stream's {size} bytes were cut here (over {limit})]\n"
LINE_SNAP = 4096  # how far a cut moves to fall at a line's end


def fit_outputs(
    streams: list[tuple[str, int]], files: list[tuple[str, int]], budget: int
) -> tuple[dict[str, int], list[str]]:
    """What of the outputs a pilot uploads within `budget` bytes: the bytes kept of each
    stream (name, size), fewer than its size when it is cut, and the files (name, size, in
    the order given) left out. Everything fits: everything is kept. Otherwise half the budget
    is the streams' first (an equal share each, as much as they need of it); the files follow,
    whole, each that still fits; what is left goes back to the streams that were cut."""
    total = sum(size for _, size in streams) + sum(size for _, size in files)
    if total <= budget:
        return {name: size for name, size in streams}, []
    share = budget // (2 * len(streams)) if streams else 0
    keep = {name: min(size, share) for name, size in streams}
    room = budget - sum(keep.values())
    left_out = []
    for name, size in files:
        if size <= room:
            room -= size
        else:
            left_out.append(name)
    wanting = {name: size for name, size in streams if size > keep[name]}
    while room > 0 and wanting:
        each = max(1, room // len(wanting))
        for name in sorted(wanting, key=lambda n: wanting[n] - keep[n]):
            more = min(each, wanting[name] - keep[name], room)
            keep[name] += more
            room -= more
        wanting = {n: s for n, s in wanting.items() if s > keep[n]}
    return keep, left_out


def cut_copy(source: str, dest: str, size: int, keep: int, limit_name: str) -> int:
    """Write into `dest` the head and tail of `source` (`size` bytes) in at most `keep` bytes,
    joined by CUT_MARK, each cut moved to a line's end when one is near: the bytes written."""
    mark_room = len(CUT_MARK.format(cut=size, size=size, limit=limit_name).encode())
    if keep <= mark_room:
        open(dest, "wb").close()  # no room even for the mark: the job's flag says it all
        return 0
    room = keep - mark_room
    head_end, tail_start = room // 2, size - (room - room // 2)
    with open(source, "rb") as src:
        src.seek(max(0, head_end - LINE_SNAP))
        window = src.read(head_end - max(0, head_end - LINE_SNAP))
        newline = window.rfind(b"\n")
        if newline >= 0:
            head_end = head_end - len(window) + newline + 1
        src.seek(tail_start)
        window = src.read(min(LINE_SNAP, size - tail_start))
        newline = window.find(b"\n")
        if 0 <= newline < len(window) - 1:
            tail_start += newline + 1
        mark = CUT_MARK.format(cut=tail_start - head_end, size=size, limit=limit_name).encode()
        with open(dest, "wb") as out:
            _copy(src, out, 0, head_end)
            out.write(mark)
            _copy(src, out, tail_start, size - tail_start)
    return head_end + len(mark) + size - tail_start


def _copy(src, out, start: int, length: int) -> None:
    src.seek(start)
    while length > 0:
        chunk = src.read(min(_LINE_CHUNK, length))
        if not chunk:
            break
        out.write(chunk)
        length -= len(chunk)
