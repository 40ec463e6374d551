"""Static files that come from installed packages rather than from static/:

- vendor/redoc.standalone.js: drf-spectacular-sidecar's ReDoc, its one CDN asset (the Redocly
  logo under the menu) pointed at a local copy, img/redoc-logo.svg. The patched copy is written
  once into build/static/ (regenerated when the sidecar's bundle is newer).
"""

import os
import re
from pathlib import Path

import drf_spectacular_sidecar
from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage


class _OneFileFinder(BaseFinder):
    """Finds one file, `name` ("vendor/x.js"), at the path `source()` returns."""

    name = ""

    def source(self) -> Path:
        raise NotImplementedError

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        find_all = find_all or kwargs.get("all", False)
        if path != self.name:
            return []  # not None: staticfiles.finders.find() would then return [None]
        found = str(self.source())
        return [found] if find_all else found

    def list(self, ignore_patterns):
        path = self.source()
        storage = FileSystemStorage(location=str(path.parent))
        storage.prefix = str(Path(self.name).parent)
        yield path.name, storage


REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
_SOURCE_MAP = re.compile(r"^//# sourceMappingURL=.*$", re.MULTILINE)


class RedocFinder(_OneFileFinder):
    name = "vendor/redoc.standalone.js"

    def source(self) -> Path:
        original = (
            Path(drf_spectacular_sidecar.__file__).resolve().parent
            / "static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
        )
        patched = Path(settings.BASE_DIR) / "build" / "static" / self.name
        if not patched.exists() or patched.stat().st_mtime < original.stat().st_mtime:
            text = original.read_text(encoding="utf-8")
            logo = f"{settings.STATIC_URL}img/redoc-logo.svg"
            # The source map describes the original bundle, which is not served.
            text = _SOURCE_MAP.sub("", text.replace(REDOC_CDN_LOGO, logo))
            patched.parent.mkdir(parents=True, exist_ok=True)
            tmp = patched.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(patched)  # atomic: concurrent processes never read half a file
        return patched
