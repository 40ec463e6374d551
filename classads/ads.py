"""ClassAd text in, ClassAds out, with errors that name the attribute: site ads in either syntax,
job ads as a ClassAd or as condor_submit lines. Pure (no ORM); evaluation is HTCondor's own.
"""

from __future__ import annotations

import re
from typing import cast

from classad2 import ClassAd, ExprTree, Value

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
OLD_LINE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=(?!=)(.*)$")
# condor_submit's universe names -> JobUniverse numbers (condor_universe.h).
UNIVERSES = {"standard": 1, "vanilla": 5, "scheduler": 7, "globus": 9, "grid": 9, "local": 12}
# condor_submit commands whose attribute has another name; the rest keep the name as written.
SUBMIT_NAMES = {
    "environment": "Environment",
    "globusscheduler": "GlobusScheduler",
    "globusrsl": "GlobusRSL",
    "grid_resource": "GridResource",
    "executable": "Cmd",
    "arguments": "Args",
    "remote_initialdir": "RemoteIwd",
}
# Expressions in a submit file; every other command's value is text (condor_submit quotes it).
SUBMIT_EXPRESSIONS = {"requirements", "rank"}
# What the columns a site ad is stored in hold (classads.models.SiteAd): its Name, and counts
# and a sequence number with room for the negotiator's and the monitor's increments.
NAME_MAX = 255
INT64_MAX = 2**63 - 1
SEQUENCE_MAX = 10**18
COUNT_MAX = 10**9
DIGITS = frozenset("0123456789")
NUMBER_RE = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?")


class AdError(ValueError):
    """An ad that cannot be used; `field` names the attribute (or "ad" for the whole text)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal opened at text[i]."""
    i += 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _check_integers(text: str, field: str) -> None:
    """An integer literal a ClassAd integer (64 bits) cannot hold is not read as written (the
    library quietly makes it another number): refused, naming the attribute."""
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
        elif c in DIGITS and not (i and (text[i - 1].isalnum() or text[i - 1] in "_.")):
            m = cast("re.Match[str]", NUMBER_RE.match(text, i))  # a digit always matches
            if not (m.group(1) or m.group(2)) and int(m.group(0)) > INT64_MAX:
                raise AdError(field, f"the integer {m.group(0)} is out of range (at most 2^63-1)")
            i = m.end()
        else:
            i += 1


def _parse_expr(text: str, field: str) -> ExprTree:
    _check_integers(text, field)
    try:
        return ExprTree(text)
    except Exception as exc:  # ClassAdException: the parser's message
        raise AdError(field, f"not a valid ClassAd expression ({exc}): {text.strip()}") from None


def _attribute_texts(body: str) -> list[tuple[str, str]]:
    """(name, expression text) of each attribute of a new-syntax ad `[ A = 1; B = "x" ]`:
    its `;`-separated parts, string literals and nested groups kept whole."""
    inner = body.strip()[1:-1]
    parts, depth, start, i = [], 0, 0, 0
    while i < len(inner):
        c = inner[i]
        if c == '"':
            i = _skip_string(inner, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
        i += 1
    parts.append(inner[start:])
    return [(n.strip(), e) for n, sep, e in (p.partition("=") for p in parts) if sep]


def _end_of_group(text: str, start: int) -> int:
    """Index just past the bracket group opened at text[start], skipping string literals."""
    pairs = {"[": "]", "(": ")", "{": "}"}
    stack = []
    i = start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1


def parse_new(text: str) -> ClassAd:
    """One ad in the new syntax, `[ A = 1; B = "x" ]`, and nothing after it (the library
    would quietly ignore what follows the first ad)."""
    body = text.strip()
    if not body.startswith("["):
        raise AdError("ad", "not a ClassAd in the new syntax: it must start with [")
    if _end_of_group(body, 0) == len(body):
        for name, expr in _attribute_texts(body):
            _check_integers(expr, name)
    try:
        ad = ClassAd(body)
    except Exception as exc:
        raise AdError("ad", f"not valid ClassAd syntax ({exc})") from None
    if _end_of_group(body, 0) != len(body):
        raise AdError("ad", "not one ClassAd in the new syntax: text outside [ ... ]")
    return ad


def parse_old(text: str) -> ClassAd:
    """The old `Attr = value` lines of condor_advertise, each line checked: the library's old
    parser stops quietly at the first bad line, keeping what came before."""
    ad = ClassAd()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = OLD_LINE_RE.match(line)
        if not m:
            raise AdError("ad", f"line {number}: expected `Attr = value`, got {line.strip()!r}")
        name = m.group(1)
        if not NAME_RE.match(name):
            raise AdError(name, f"line {number}: not an attribute name")
        ad[name] = _parse_expr(old_to_new_escaping(m.group(2).rstrip()), name)
    return ad


def old_to_new_escaping(text: str) -> str:
    """An old-syntax value in the new syntax's escaping, as HTCondor converts it before
    parsing: in the old syntax a backslash is literal (`"C:\\tmp"` is 6 characters) except
    before a quote that does not end the line (`\\"` is a quote inside the string)."""
    if "\\" not in text:
        return text
    out = []
    for i, c in enumerate(text):
        out.append(c)
        if c == "\\" and not (i + 2 < len(text) and text[i + 1] == '"'):
            out.append("\\")
    return "".join(out)


def parse_ad(text: str, syntax: str = "auto") -> ClassAd:
    """A ClassAd in either syntax; `auto`: new when the text starts with `[`."""
    if not isinstance(text, str) or not text.strip():
        raise AdError("ad", "is empty")
    if syntax == "new" or (syntax == "auto" and text.lstrip().startswith("[")):
        return parse_new(text)
    return parse_old(text)


def parse_site_ad(text: str, syntax: str = "auto", max_sequence: int = SEQUENCE_MAX) -> ClassAd:
    """A site ad fit to store; `max_sequence` is higher for the matchmaker monitor only, whose
    re-advertisements go past the sequence numbers a site may give by one each time."""
    ad = parse_ad(text, syntax)
    name = ad.get("Name")
    if not isinstance(name, str) or not name.strip():
        raise AdError("Name", "a site ad needs a unique Name (a string)")
    if len(name.strip()) > NAME_MAX:
        # Cut to fit, it would be another Name, perhaps another site's.
        raise AdError("Name", f"at most {NAME_MAX} characters, got {len(name.strip())}")
    seq = ad.get("UpdateSequenceNumber")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise AdError(
            "UpdateSequenceNumber", f"must be an integer, got {ad.lookup('UpdateSequenceNumber')}"
        )
    if seq is not None and not 0 <= seq <= max_sequence:
        raise AdError("UpdateSequenceNumber", f"must be 0 to {max_sequence}, got {seq}")
    if "Requirements" not in ad:
        raise AdError("Requirements", "a site ad needs Requirements (use true to accept any job)")
    for attr in ("CurMatches", "MaxMatches"):
        value = ad.get(attr)
        if value is not None and not isinstance(value, (int, ExprTree)):
            raise AdError(attr, "must be an integer")
        if isinstance(value, bool):
            raise AdError(attr, "must be an integer")
        if attr in ad:
            value = ad.eval(attr)
            if isinstance(value, int) and not isinstance(value, bool):
                if not 0 <= value <= COUNT_MAX:
                    raise AdError(attr, f"must be 0 to 10^9, got {value}")
    return ad


def parse_submit(text: str) -> ClassAd:
    """A job ad from condor_submit lines: `+Attr = expr` and MY.Attr = expr insert ClassAd
    expressions, Requirements and Rank are expressions, any other command is text; `universe`
    also sets JobUniverse; `queue` ends the description."""
    ad = ClassAd()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if re.match(r"(?i)^queue\b(?!\s*=)", line):
            break
        m = re.match(r"^(\+|MY\.)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$", line, re.IGNORECASE)
        if not m:
            raise AdError("ad", f"line {number}: expected `command = value`, got {line!r}")
        prefix, name, value = m.group(1), m.group(2), m.group(3).strip()
        if prefix or name.lower() in SUBMIT_EXPRESSIONS:
            if not value:
                raise AdError(name, f"line {number}: has no expression")
            ad[name] = _parse_expr(value, name)
            continue
        lowered = name.lower()
        if lowered == "universe":
            number_ = UNIVERSES.get(value.lower())
            if number_ is None:
                raise AdError(name, f"line {number}: unknown universe {value!r}")
            ad["JobUniverse"] = number_
            continue
        ad[SUBMIT_NAMES.get(lowered, name)] = value
    return ad


def parse_job_ad(text: str) -> ClassAd:
    """A job's ad: a new-syntax ClassAd (`[ ... ]`) or condor_submit lines. Requirements must be
    present or default to true; Rank defaults to 0.0 as condor_submit writes it, because a job
    ad without Rank would be ranked by the *site's* Rank (docs/developer-guide.md, Condor-G
    ClassAd matchmaking)."""
    if not isinstance(text, str) or not text.strip():
        raise AdError("ad", "is empty")
    ad = parse_new(text) if text.lstrip().startswith("[") else parse_submit(text)
    if "Requirements" not in ad:
        ad["Requirements"] = True
    if "Rank" not in ad:
        ad["Rank"] = 0.0
    for attr in list(ad.keys()):
        if attr.upper().startswith("MATCH_"):
            raise AdError(attr, "MATCH_ attributes are written by the negotiator, not submitted")
    return ad


# --- evaluation helpers -------------------------------------------------------------------------


def holds(value: object) -> bool:
    """HTCondor's test of a Requirements (EvalBool): true, or a non-zero integer or real;
    false, zero, UNDEFINED, ERROR, text or anything else is not a match. Value.Error and
    Value.Undefined are IntEnum members that compare equal to integers: tested first."""
    if isinstance(value, Value):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return False


def rank_float(value: object) -> float:
    """HTCondor's EvalFloat: int, real or bool as a float, anything else 0.0."""
    if isinstance(value, Value):
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return 0.0


def refs(ad: ClassAd, expr: ExprTree) -> tuple[list[str], list[str]]:
    """(internal, external) references of `expr` in `ad`: internal ones are attributes of the
    ad itself (chased through the attributes they name), external ones are scoped to TARGET or
    missing here, so the negotiator looks them up in the other ad."""
    return (
        [r for r in ad.internalRefs(expr) if r],
        [r for r in ad.externalRefs(expr) if r],
    )


def bare(name: str) -> str:
    """`TARGET.Memory` -> `memory`: the attribute name the other ad is asked for."""
    return name.rsplit(".", 1)[-1].lower()


def split_conjuncts(text: str) -> list[str]:
    """The top-level `&&` clauses of an expression's text, outer parentheses removed, so that
    each clause can be evaluated and reported on its own. `||` and `?:` bind more loosely than
    `&&`: an expression with either at the top level is not a conjunction (`a && b || c` is
    `(a && b) || c`) and is one clause, whole."""
    text = _strip_parens(text.strip())
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "\"'":  # a string literal, or a quoted attribute name
            i += 1
            while i < len(text) and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and (text.startswith("||", i) or (c == "?" and not _meta_equal(text, i))):
            return [text] if text else []
        elif c == "&" and depth == 0 and text.startswith("&&", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    return [_strip_parens(p.strip()) for p in parts if p.strip()]


def _meta_equal(text: str, i: int) -> bool:
    """Whether the `?` at text[i] is the middle of `=?=`, not the conditional operator."""
    return text[i - 1 : i] == "=" and text[i + 1 : i + 2] == "="


def _strip_parens(text: str) -> str:
    while text.startswith("(") and _end_of_group(text, 0) == len(text):
        text = text[1:-1].strip()
    return text
