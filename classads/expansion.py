"""`$$()` expansion at match time, as HTCondor's schedd does it (docs/developer-guide.md,
Condor-G ClassAd matchmaking).

Every job attribute whose unparsed text contains `$$(` (except the MATCH_ ones) is expanded
textually and parsed again:
- `$$(Name)` inserts the site ad's *unparsed* right-hand side of Name, quotes stripped, and
  records it as `MATCH_<Name>`;
- `$$(Name:default)` uses the default when the site lacks Name (also recorded as MATCH_<Name>);
- `$$([expr])` inserts `string(expr)` evaluated with MY = job, TARGET = site; it must be text;
- `$$(DOLLARDOLLAR)` is a literal `$$`.
Text HTCondor's scanner does not read as one of these (a default with `-`, `:` or `(`, a body
with no closing `)`, a `$$([` with no `])`) stays as written.
Each expanded attribute is recorded as `MATCH_EXP_<Attr>`. A failure (a missing attribute with
no default, a non-text expression, a `.` in a name) holds the job with the reason
`Cannot expand $$ expression (<name>).` Pure: ClassAds in, an Expansion out.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

from classad2 import ClassAd, ExprTree

from classads.ads import NAME_RE


@dataclass
class Expansion:
    hold_reason: str = ""
    # MATCH_<SiteAttr> and MATCH_EXP_<JobAttr>, as ClassAd expression text.
    match_attrs: dict[str, str] = field(default_factory=dict)
    # JobAttr -> its expanded expression text (also in match_attrs as MATCH_EXP_<JobAttr>).
    expanded: dict[str, str] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        return bool(self.hold_reason)


class _Failed(Exception):
    def __init__(self, name: str):
        self.name = name


def hold_reason(name: str) -> str:
    return f"Cannot expand $$ expression ({name})."


def _unquote(text: str) -> str:
    if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    return text


def _resolve(body: str, job: ClassAd, site: ClassAd, match_attrs: dict[str, str]) -> str:
    if body == "DOLLARDOLLAR":
        return "$$"
    if body.startswith("["):
        source = body[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        try:
            value = ExprTree(f"string({source})").eval(job, site)
        except Exception:
            raise _Failed(body) from None
        if not isinstance(value, str):
            raise _Failed(body)
        return value
    name, has_default, default = body.partition(":")
    name = name.strip()
    if not NAME_RE.match(name):  # a `.` (TARGET.X) or anything else is a failure
        raise _Failed(name)
    if name in site:
        value = _unquote(str(site.lookup(name)))
    elif has_default:
        value = default
    else:
        raise _Failed(name)
    match_attrs[f"MATCH_{name}"] = value
    return value


# What HTCondor's scanner accepts in `$$(Name:default)`: identifier characters in the name, and
# in the default also `$`, space, `,` and `\`. Anything else (`-`, `:`, `(` ...) means the text
# is not a `$$()` at all and stays as written.
ID_CHARS = frozenset(string.ascii_letters + string.digits + "_./")
DEFAULT_CHARS = ID_CHARS | frozenset("$ ,\\")
WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def _body_end(text: str, body: int) -> int:
    """Index of the `)` closing the `$$(` body that starts at text[body], or -1 when HTCondor
    would not read it as a `$$()`: `$$([expr])` ends at the first `])` (whatever the quotes),
    `$$(Name)` and `$$(Name:default)` at the first `)` if every character is allowed."""
    if text.startswith("[", body):
        end = text.find("])", body)
        return end + 1 if end >= 0 else -1
    after_colon = False
    for i in range(body, len(text)):
        c = text[i]
        if c == ")":
            return i
        if c == ":" and not after_colon:
            after_colon = True
        elif c not in (DEFAULT_CHARS if after_colon else ID_CHARS):
            return -1
    return -1


def _next_macro(text: str, pos: int) -> tuple[int, int, int] | None:
    """(the `$$(`, its body, its closing `)`) of the next `$$()` at or after `pos`, scanned as
    HTCondor's next_dollardollar_macro does: `$` or `$$` then a word then `(` is a candidate,
    only `$$(` is one, and one whose body is not recognised is skipped past its `(`."""
    while True:
        dollar = text.find("$", pos)
        if dollar < 0:
            return None
        p = dollar + 1
        if text.startswith("$", p):
            p += 1
        while p < len(text) and text[p] in WORD_CHARS:
            p += 1
        if p == dollar + 2 and text.startswith("(", p):
            close = _body_end(text, p + 1)
            if close >= 0:
                return dollar, p + 1, close
            p += 1
        pos = p


def _expand_text(text: str, job: ClassAd, site: ClassAd, match_attrs: dict[str, str]) -> str:
    out, i = [], 0
    while (found := _next_macro(text, i)) is not None:
        dollar, body, close = found
        out.append(text[i:dollar])
        out.append(_resolve(text[body:close], job, site, match_attrs))
        i = close + 1
    out.append(text[i:])
    return "".join(out)


def expand(job: ClassAd, site: ClassAd) -> Expansion:
    """Expand the job's `$$()` references against the matched site ad."""
    result = Expansion()
    match_attrs: dict[str, str] = {}
    for attr in job.keys():
        if attr.upper().startswith("MATCH_"):
            continue
        text = str(job.lookup(attr))
        if "$$(" not in text:
            continue
        try:
            expanded = _expand_text(text, job, site, match_attrs)
        except _Failed as failed:
            return Expansion(hold_reason=hold_reason(failed.name))
        try:
            ExprTree(expanded)
        except Exception:
            return Expansion(hold_reason=hold_reason(attr))
        result.expanded[attr] = expanded
    result.match_attrs = dict(match_attrs)
    for attr, text in result.expanded.items():
        result.match_attrs[f"MATCH_EXP_{attr}"] = text
    return result


def expanded_ad(job: ClassAd, expansion: Expansion) -> ClassAd:
    """The job ad as submitted to the site: expanded attributes replaced, MATCH_* added."""
    ad = ClassAd(str(job))
    for attr, text in expansion.expanded.items():
        ad[attr] = ExprTree(text)
    for attr, text in expansion.match_attrs.items():
        ad[attr] = text if not attr.startswith("MATCH_EXP_") else ExprTree(text)
    return ad


def parse_environment(value: object) -> dict[str, str]:
    """`A=1;B=2` (HTCondor's old environment syntax, the seed's SiteEnvironment) as a dict."""
    env: dict[str, str] = {}
    if not isinstance(value, str):
        return env
    for item in value.split(";"):
        key, eq, val = item.partition("=")
        if eq and key.strip():
            env[key.strip()] = val
    return env
