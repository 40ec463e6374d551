"""The apps are layers: a module imports its own app, the apps below it and third-party code, never
an app above it (docs/developer-guide.md, Layout). Read from the source with `ast`, so that an
import inside a function counts as much as one at the top of a module; migrations and tests are left
out.

    0 config (the base app)  <-  1 shares  <-  2 matcher
      <-  3 pilots, brokerage, classads, timeouts, retention, notifications, sandboxes (may
          import each other)
      <-  4 simulation, monitoring  <-  5 gridwms (the project root: settings, URLs, wsgi;
          imports anything)

Besides `import` statements, a module named by a constant string to importlib.import_module(),
__import__(), apps.get_model() or a URLconf's include() counts too: a string does not hide the
dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent

LAYERS = {
    "core": 0,
    "shares": 1,
    "matcher": 2,
    "pilots": 3,
    "brokerage": 3,
    "classads": 3,
    "timeouts": 3,
    "retention": 3,
    "notifications": 3,
    "sandboxes": 3,
    "accounting": 3,
    "simulation": 4,
    "web": 5,
    "api": 5,
    "gridwms": 6,
}

# Known offences, each (file, imported module), left for their apps' owners to remove while
# those apps are being reorganised; an entry that no longer offends must go.
KNOWN_OFFENCES: set[tuple[str, str]] = {
    ("core/admin.py", "web.core.login"),
    ("core/middleware.py", "web.core.error_pages"),
    ("matcher/claims.py", "web.core.error_pages"),
    ("matcher/servability.py", "web.matcher.selectors"),
    ("matcher/servability.py", "web.shares.overview"),
    ("sandboxes/services.py", "api.matcher.payload"),
    ("sandboxes/services.py", "api.matcher.resources"),
    ("sandboxes/services.py", "api.sandboxes.parsers"),
    ("simulation/services.py", "api.classads.serializers"),
}

_BY_NAME = {"import_module", "__import__", "get_model", "include"}


def _named_by_string(node: ast.Call) -> str | None:
    """The module (or app label) a call names in a constant string, if it is one of _BY_NAME."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _BY_NAME or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import anywhere in the module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:  # a relative import stays inside its package
                yield node.lineno, node.module
        elif isinstance(node, ast.Call):
            named = _named_by_string(node)
            if named:
                yield node.lineno, named


def app_sources() -> Iterator[tuple[str, Path]]:
    """(app, path) of every module of the apps, migrations and tests excepted."""
    for app in LAYERS:
        for path in sorted((ROOT / app).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or "tests" in parts:
                continue
            yield app, path


def offences() -> list[tuple[str, int, str]]:
    """(file, line, imported module) of every import of an app in a higher layer."""
    found = []
    for app, path in app_sources():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for lineno, module in imported_modules(tree):
            target = module.split(".")[0]
            if LAYERS.get(target, -1) > LAYERS[app]:
                found.append((rel, lineno, module))
    return sorted(found)


def test_no_app_imports_a_module_of_an_app_in_a_higher_layer():
    assert sum(1 for _ in app_sources()) > 50  # the apps' modules were found and read
    unexpected = [(f, line, m) for f, line, m in offences() if (f, m) not in KNOWN_OFFENCES]
    assert not unexpected, "imports running up the layers:\n" + "\n".join(
        f"  {f}:{line} -> {m}" for f, line, m in unexpected
    )


def test_every_known_offence_still_offends_else_it_leaves_the_list():
    current = {(f, m) for f, _line, m in offences()}
    gone = sorted(KNOWN_OFFENCES - current)
    assert not gone, "fixed: remove from KNOWN_OFFENCES in tests/test_layers.py:\n" + "\n".join(
        f"  {f} -> {m}" for f, m in gone
    )


def test_every_app_of_the_project_has_a_layer():
    local = {
        app.split(".")[0] for app in settings.INSTALLED_APPS if (ROOT / app.split(".")[0]).is_dir()
    }
    assert local, settings.INSTALLED_APPS
    assert local <= set(LAYERS), f"no layer in tests/test_layers.py: {sorted(local - set(LAYERS))}"
    assert settings.ROOT_URLCONF.split(".")[0] == "gridwms"  # the root sits above every app
