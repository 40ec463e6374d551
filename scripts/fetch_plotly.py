#!/usr/bin/env python3
"""Re-fetch the vendored plotly.js bundle, static/vendor/plotly-basic.min.js, from the npm registry.

    python3 scripts/fetch_plotly.py            # the pinned version below
    python3 scripts/fetch_plotly.py --check    # only verify the vendored copy against the pin

The pages draw their charts with plotly.js's official partial bundle `plotly.js-basic-dist-min`
(the trace types bar, pie and scatter: every chart in web/*/charts.py is one of those), about a
quarter of the full bundle the python plotly package ships. The bundle and its licence are
committed under static/vendor/, so a fresh clone needs neither node nor the network; this script
is how they were fetched and how to move the pin. Pin the plotly.js version the installed python
plotly package ships (its package_data/plotly.min.js names it in its first lines), so that the
figures' JSON and the drawing code agree. The tarball is checked against the registry's sha512
integrity recorded here. Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

PACKAGE = "plotly.js-basic-dist-min"
VERSION = "4.1.1"
# `npm view plotly.js-basic-dist-min@4.1.1 dist.integrity`
INTEGRITY = (
    "sha512-1oNF8PeQx2hv/y7tqEVWKD3JGwn/MGEMQ8mL9HUwsaqG9FGy/OU5FHUHvzqbqxN4mnwZGI9abTiE775C4kkjMQ"
    "=="
)
REGISTRY = "https://registry.npmjs.org"
VENDOR = Path(__file__).resolve().parent.parent / "static" / "vendor"
# tarball member -> the file it becomes under static/vendor/
FILES = {
    "package/plotly-basic.min.js": "plotly-basic.min.js",
    "package/LICENSE": "plotly-basic.LICENSE.txt",
}


def tarball_url(package: str, version: str) -> str:
    return f"{REGISTRY}/{package}/-/{package}-{version}.tgz"


def verified(data: bytes, integrity: str) -> bool:
    algorithm, _, expected = integrity.partition("-")
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected


def members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {name: tar.extractfile(name).read() for name in FILES}  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    url = tarball_url(PACKAGE, VERSION)
    with urllib.request.urlopen(url, timeout=120) as answer:
        data = answer.read()
    if not verified(data, INTEGRITY):
        print(f"{url}: its sha512 is not the pinned integrity; nothing written", file=sys.stderr)
        return 1
    files = members(data)
    differ = []
    for member, name in FILES.items():
        target = VENDOR / name
        if not target.exists() or target.read_bytes() != files[member]:
            differ.append(name)
            if not args.check:
                VENDOR.mkdir(parents=True, exist_ok=True)
                target.write_bytes(files[member])
    if args.check:
        print("differs from the pin: " + ", ".join(differ) if differ else "matches the pin")
        return 1 if differ else 0
    print(f"{PACKAGE}@{VERSION} -> {VENDOR} ({', '.join(differ) or 'unchanged'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
