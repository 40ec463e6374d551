"""How fast the busiest pages load in a browser, against a running server (`make run`).

    .venv/bin/python bench/page_load.py --url http://127.0.0.1:8131 --runs 5
    .venv/bin/python bench/page_load.py --url http://127.0.0.1:8141 --url http://127.0.0.1:8142

Given several --url (two servers of one database: the code before and after a change), the runs
alternate between them, page by page, so that a busy machine slows both alike.

Headless Chromium (Debian's, /usr/bin/chromium) driven by Playwright logs in as admin through the
login form's POST, then loads each page with a cold cache (the browser's cache cleared after logging
in, so the page's scripts and styles are fetched again) at 1280×900: Home, Shares, Accounting,
the decision trace (the task page of the latest brokerage decision, ?run=...), a TaskQueue page
(the first of the TaskQueues list), gdpconfig and the jobs list. Per page and run:

- `bytes`: bytes on the wire for the page's first load (headers and bodies, as encoded), counted
  until the load event, the first chart drawn (on a page with charts) and 0.5 s of network quiet;
- `ttfb_ms`: the server's time to the first byte of the page (request start to response start);
- `dcl_ms`: DOMContentLoaded (its end), from navigation start;
- `load_ms`: the load event (its end);
- `interactive_ms`: the later of the load event and the first chart drawn (a Plotly SVG in the
  page); on a page without charts, the load event.

--mbps and --latency-ms emulate a network (Chromium's own throttling of the page's requests): the
demo seen from another machine rather than from its own.

It prints one JSON line per page and figure, the median over --runs (`bench/RESULTS.md`, How the
benchmarks report), with the runs' values in `runs`. Nothing is written to the server.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

# Set before any page script: the time (ms from navigation start) a Plotly chart first appears.
FIRST_CHART = """
window.__firstChart = null;
new MutationObserver(function (records, observer) {
  if (document.querySelector('.js-plotly-plot .main-svg')) {
    window.__firstChart = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""

TIMINGS = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {ttfb_ms: n.responseStart - n.requestStart, dcl_ms: n.domContentLoadedEventEnd,
          load_ms: n.loadEventEnd, first_chart_ms: window.__firstChart,
          charts: document.querySelectorAll('script[data-chart]').length};
}"""


def emit(metric: str, value: float, unit: str, **context) -> None:
    print(json.dumps({"metric": metric, "value": round(value, 1), "unit": unit, **context}))
    sys.stdout.flush()


def login(context, base: str, username: str, password: str) -> None:
    """Log the browser context in through the login form's own POST (its CSRF token, fields
    and Referer), without rendering a page: the page a login lands on (the home page) would
    otherwise still be fetching and parsing plotly when the measured load starts."""
    form = context.request.get(base + "/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text())
    assert token, "no CSRF token on /login/"
    answer = context.request.post(
        base + "/login/",
        form={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": base + "/login/"},
        max_redirects=0,
    )
    if answer.status != 302:
        raise SystemExit(f"cannot log in as {username}: HTTP {answer.status}")


def first_link(page, base: str, path: str, pattern: str) -> str | None:
    """The first link on `path` whose href matches `pattern`."""
    page.goto(base + path)
    for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
        if re.search(pattern, href):
            return href
    return None


def pages(browser, base: str, username: str, password: str) -> dict[str, str]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(context, base, username, password)
    found = {"home": "/", "shares": "/shares/", "accounting": "/accounting/"}
    trace = first_link(page, base, "/brokerage/decisions/", r"^/brokerage/tasks/\d+/\?run=\d+")
    if trace:
        found["decision_trace"] = trace
    taskqueue = first_link(page, base, "/taskqueues/", r"^/taskqueues/\d+/$")
    if taskqueue:
        found["taskqueue"] = taskqueue
    found["gdpconfig"] = "/config/"
    found["jobs"] = "/jobs/"
    context.close()
    return found


NETWORK: dict = {}  # Network.emulateNetworkConditions' arguments, when --mbps is given


def load_once(browser, base: str, path: str, username: str, password: str) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(context, base, username, password)
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.clearBrowserCache")
    if NETWORK:
        cdp.send("Network.emulateNetworkConditions", NETWORK)
    transferred = {"bytes": 0, "last": time.monotonic()}
    # Only this load's requests: the page the login landed on may finish one after this point.
    sent: set[str] = set()

    def finished(event):
        if event["requestId"] in sent:
            transferred["bytes"] += event.get("encodedDataLength", 0)
            transferred["last"] = time.monotonic()

    cdp.on("Network.requestWillBeSent", lambda event: sent.add(event["requestId"]))
    cdp.on("Network.loadingFinished", finished)
    page.add_init_script(FIRST_CHART)
    page.goto(base + path, wait_until="load")
    figures = page.evaluate(TIMINGS)
    if figures["charts"]:
        try:
            page.wait_for_function("window.__firstChart !== null", timeout=30_000)
        except Exception:  # a page whose charts never draw: its first chart is reported null
            pass
        figures = page.evaluate(TIMINGS)
    deadline = time.monotonic() + 10
    while time.monotonic() - transferred["last"] < 0.5 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    figures["bytes"] = transferred["bytes"]
    chart = figures["first_chart_ms"]
    figures["interactive_ms"] = max(figures["load_ms"], chart or 0)
    context.close()
    return figures


def timed(browser, base: str, path: str, username: str, password: str) -> dict:
    """load_once, tried again once if the browser gave up (a busy machine's 30 s timeouts)."""
    try:
        return load_once(browser, base, path, username, password)
    except Exception as error:  # Playwright's TimeoutError and its kin
        print(f"{base}{path}: {error.__class__.__name__}, once more", file=sys.stderr)
        return load_once(browser, base, path, username, password)


def report(name: str, base: str, path: str, runs: list[dict]) -> None:
    for key, unit in (
        ("bytes", "bytes"),
        ("ttfb_ms", "ms"),
        ("dcl_ms", "ms"),
        ("load_ms", "ms"),
        ("interactive_ms", "ms"),
    ):
        values = [r[key] for r in runs if r[key] is not None]
        emit(
            f"{name}_{key}",
            statistics.median(values) if values else float("nan"),
            unit,
            url=base,
            page=path,
            charts=runs[0]["charts"],
            runs=[round(v, 1) for v in values],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", action="append", help="a server (repeatable); default :8000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", default="admin")
    parser.add_argument("--only", default="", help="comma-separated page names")
    parser.add_argument("--mbps", type=float, default=0, help="emulated bandwidth, Mbit/s")
    parser.add_argument("--latency-ms", type=float, default=0, help="emulated round trip")
    args = parser.parse_args()
    if args.mbps:
        rate = args.mbps * 1_000_000 / 8  # bytes per second
        NETWORK.update(
            offline=False,
            latency=args.latency_ms,
            downloadThroughput=rate,
            uploadThroughput=rate,
        )
    bases = [u.rstrip("/") for u in args.url or ["http://127.0.0.1:8000"]]

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        found = {base: pages(browser, base, args.user, args.password) for base in bases}
        wanted = [n for n in args.only.split(",") if n] or list(found[bases[0]])
        for name in wanted:
            runs: dict[str, list[dict]] = {base: [] for base in bases if name in found[base]}
            for base in runs:  # a warm-up: the servers' caches, the pages' first compilation
                load_once(browser, base, found[base][name], args.user, args.password)
            for _ in range(args.runs):
                for base in runs:
                    runs[base].append(
                        timed(browser, base, found[base][name], args.user, args.password)
                    )
            for base, done in runs.items():
                report(name, base, found[base][name], done)
        browser.close()


if __name__ == "__main__":
    main()
