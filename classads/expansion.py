"""`$$()` expansion at match time, as HTCondor's schedd does it (reference/condor.md §5).

Every job attribute whose unparsed text contains `$$(` (except the MATCH_ ones) is expanded
textually and parsed again:
- `$$(Name)` inserts the site ad's *unparsed* right-hand side of Name, quotes stripped, and
  records it as `MATCH_<Name>`;
- `$$(Name:default)` uses the default when the site lacks Name (also recorded as MATCH_<Name>);
- `$$([expr])` inserts `string(expr)` evaluated with MY = job, TARGET = site; it must be text;
- `$$(DOLLARDOLLAR)` is a literal `$$`.
Each expanded attribute is recorded as `MATCH_EXP_<Attr>`. A failure (a missing attribute with
no default, a non-text expression, a `.` in a name) holds the job with the reason
`Cannot expand $$ expression (<name>).` Pure: ClassAds in, an Expansion out.
"""

from __future__ import annotations

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


def _expand_text(text: str, job: ClassAd, site: ClassAd, match_attrs: dict[str, str]) -> str:
    out, i = [], 0
    while True:
        j = text.find("$$(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = j + 3
        if text.startswith("[", k):
            # The expression runs to its matching bracket, then `)`.
            depth, end = 0, -1
            for n in range(k, len(text)):
                depth += {"[": 1, "]": -1}.get(text[n], 0)
                if depth == 0:
                    end = n + 1
                    break
            if end < 0 or not text.startswith(")", end):
                raise _Failed(text[k:].split(")", 1)[0])
            body, close = text[k:end], end
        else:
            close = text.find(")", k)
            if close < 0:
                raise _Failed(text[k:])
            body = text[k:close]
        out.append(_resolve(body, job, site, match_attrs))
        i = close + 1


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
