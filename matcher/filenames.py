"""The file names a job's payload gives (docs/user-guide.md, What a job runs): its output
sandbox's names and patterns, stdout's and stderr's names, an input sandbox's files. Each check
says why a name is refused, or None; the submission's fields and the sandboxes' files use them
alike."""

from __future__ import annotations

import re
import unicodedata

MAX_NAME_CHARS = 255


def hidden_character(value: str) -> str | None:
    """A control character, or a format one: U+202E shows "\u202egnp.exe" as "exe.png"."""
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf"):
            return f"{value!r} holds a control or formatting character (U+{ord(ch):04X})"
    return None


def relative_path_problem(value: str) -> str | None:
    """Why `value` is not a relative path (or glob pattern) inside the working directory."""
    if not value:
        return "must not be empty"
    if "\x00" in value or "\n" in value or "\r" in value:
        return "must not hold a NUL or a line break"
    problem = hidden_character(value)
    if problem:
        return problem
    if value.startswith("/") or value.startswith("\\"):
        return f"{value!r} is an absolute path: name a file inside the working directory"
    if any(part == ".." for part in re.split(r"[\\/]", value)):
        return f"{value!r} has a '..' component: it would leave the working directory"
    return None


def plain_name_problem(value: str) -> str | None:
    """Why `value` is not a plain file name (no directory, not . or ..)."""
    if not value or value in (".", ".."):
        return "must be a file name"
    if len(value) > MAX_NAME_CHARS:
        return f"is {len(value)} characters; at most {MAX_NAME_CHARS}"
    if "/" in value or "\\" in value:
        return f"{value!r} must be a plain file name, without a directory"
    return hidden_character(value)
