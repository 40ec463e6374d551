"""DIRAC's parametric jobs: one JDL with `Parameters` stands for several jobs, each its own JDL.

As DIRAC's ParametricJob utility expands them (DIRACCommon, WorkloadManagementSystem/Utilities):
`Parameters` is a list of values, or a number of jobs whose values run from ParameterStart
(default 1), each the previous one times ParameterFactor (default 1) plus ParameterStep (default
0). In the n-th job, "%n" anywhere in the text becomes n (zero-padded to the width of the last
index) and "%s" in any attribute becomes the n-th value; Parameters and its companions give way
to `Parameter` (the value) and `ParameterNumber` (n). DIRAC's named sequences
(`Parameters.name`) are not ClassAd syntax for HTCondor's library and do not parse: a 400.

Pure: text in, texts out, with HTCondor's ClassAd library as matcher/jdl.py reads them.
"""

from __future__ import annotations

import classad2

from matcher.jdl import JDLError

# Lower case: ClassAd attribute names are case-insensitive.
COMPANIONS = ("parameterstart", "parameterstep", "parameterfactor")
PARAMETER_ATTRIBUTES = ("parameters", *COMPANIONS)


def bracketed(text: str) -> str:
    """DIRAC accepts the attribute list without its brackets."""
    body = text.strip()
    return body if body.startswith("[") else f"[{body}]"


def _ad(text: str) -> classad2.ClassAd:
    try:
        return classad2.ClassAd(text)
    except Exception as exc:  # ClassAdException or ValueError (a NUL, say)
        raise JDLError("JDL", f"not valid ClassAd syntax ({exc})") from None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _eval(ad: classad2.ClassAd, attr: str):
    try:
        value = ad.eval(attr)
    except Exception as exc:
        raise JDLError(attr, f"cannot be evaluated ({exc})") from None
    if isinstance(value, classad2.Value):
        raise JDLError(attr, f"evaluates to {value.name.lower()}")
    return value


def _name(ad: classad2.ClassAd, lower: str) -> str:
    """The attribute's name as the JDL spells it."""
    return next(k for k in ad.keys() if k.lower() == lower)


def is_parametric(text: str) -> bool:
    return "parameters" in {k.lower() for k in _ad(bracketed(text)).keys()}


def parameter_values(ad: classad2.ClassAd, limit: int) -> list:
    """The values of the parametric JDL's jobs, at most `limit` of them (counted before any is
    made: `Parameters = 1000000000` costs nothing to refuse)."""
    attr = _name(ad, "parameters")
    value = _eval(ad, attr)
    if isinstance(value, list):
        n = len(value)
        if any(not (_number(v) or isinstance(v, str)) for v in value):
            raise JDLError(attr, "its values must be strings or numbers")
    elif isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        raise JDLError(attr, "must be a list of values or a number of jobs")
    if n < 1:
        raise JDLError(attr, f"{n} jobs; a parametric JDL makes at least one")
    if n > limit:
        raise JDLError(attr, f"{n} jobs; at most {limit} (the MaxJobsPerSubmission parameter)")
    if isinstance(value, list):
        return value
    keys = {k.lower(): k for k in ad.keys()}
    start, step, factor = (
        _eval(ad, keys[c]) if c in keys else default
        for c, default in zip(COMPANIONS, (1, 0, 1), strict=True)
    )
    for c, v in zip(COMPANIONS, (start, step, factor), strict=True):
        if not _number(v):
            raise JDLError(keys[c], "must be a number")
    values = [start * type(factor)(1) + type(step)(0)]  # DIRAC's: the first takes their type
    while len(values) < n:
        values.append(values[-1] * factor + step)
    return values


def expand(text: str, limit: int) -> list[str]:
    """The JDLs of a parametric JDL's jobs, in order; a JDL without `Parameters` as it is.
    JDLError naming the attribute (or "JDL") for what does not parse or expand."""
    body = bracketed(text)
    ad = _ad(body)
    if "parameters" not in {k.lower() for k in ad.keys()}:
        return [text]
    values = parameter_values(ad, limit)
    width = len(str(len(values) - 1))
    out = []
    for n, value in enumerate(values):
        job = _ad(body.replace("%n", str(n).zfill(width)))
        for attr in list(job.keys()):
            if attr.lower() in PARAMETER_ATTRIBUTES:
                del job[attr]
                continue
            expr = str(job.lookup(attr))
            if "%s" in expr:
                try:
                    job[attr] = classad2.ExprTree(expr.replace("%s", str(value)))
                except Exception as exc:
                    raise JDLError(attr, f"with parameter {value!r}: {exc}") from None
        job["Parameter"] = value
        job["ParameterNumber"] = n
        out.append(str(job).strip())
    return out
