"""Serve plotly's own plotly.min.js from the installed package, as static/vendor/plotly.min.js."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

_DIR = Path(plotly.__file__).resolve().parent / "package_data"
_NAME = "vendor/plotly.min.js"


class PlotlyJsFinder(BaseFinder):
    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        find_all = find_all or kwargs.get("all", False)
        if path != _NAME:
            return []  # not None: staticfiles.finders.find() would then return [None]
        found = str(_DIR / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns):
        storage = FileSystemStorage(location=str(_DIR))
        storage.prefix = "vendor"
        yield "plotly.min.js", storage
