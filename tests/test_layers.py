"""The apps are layers: a module imports its own app, the apps below it and third-party code, never
an app above it (docs/developer-guide.md, Layout). Read from the source with `ast`, so that an
import inside a function counts as much as one at the top of a module; migrations and tests are left
out.

    0 core (the base app, label "config")  <-  1 shares  <-  2 matcher
      <-  3 pilots, brokerage, classads, timeouts, retention, notifications, sandboxes,
          accounting (may import each other)
      <-  4 simulation  <-  5 web, api (the pages and the API: may import each other; nothing
          below imports them)  <-  6 gridwms (the project root: settings, URLs, wsgi; imports
          anything)

Besides `import` statements, a module named by a constant string to importlib.import_module(),
__import__(), apps.get_model() or a URLconf's include() counts too: a string does not hide the
dependency. So does a model's relation named "app_label.Model": a foreign key, one-to-one or
many-to-many field points to a model of its own layer or a lower one.

The domain apps (layers 0 to 4) are headless: no view, template rendering, viewset, serializer,
form or admin registration; those are web's and api's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
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
KNOWN_OFFENCES: set[tuple[str, str]] = set()

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
    packages = _package_of_label()
    found = []
    for app, path in app_sources():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for lineno, module in imported_modules(tree):
            target = module.split(".")[0]
            if target not in LAYERS:  # apps.get_model("config", ...) names core by its label
                target = packages.get(target, target)
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


# --- relations between models ------------------------------------------------------------------


def _package_of_label() -> dict[str, str]:
    """Each installed app's label -> its top package (core's label is "config")."""
    return {config.label: config.name.split(".")[0] for config in apps.get_app_configs()}


# Known relations running up, "app.Model.field -> app.Model", left for their apps' owners; an
# entry that no longer runs up must go. A job names the pilot that claimed it (matcher below
# pilots): the column is matcher's, the model pilots'.
KNOWN_RELATIONS: set[str] = {"matcher.Job.pilot -> pilots.Pilot"}


def relations_running_up() -> tuple[int, list[str]]:
    """(how many relations were read, each model relation pointing to a higher layer). Read from
    Django's registry, so that "app_label.Model" strings count as much as imported classes. The
    user model is the one settings.AUTH_USER_MODEL names, which any app may point to, as
    Django's own apps do: such relations are not the layers' concern."""
    packages = _package_of_label()
    read, found = 0, []
    for model in apps.get_models():
        source = packages[model._meta.app_label]
        if source not in LAYERS:
            continue
        for field in [*model._meta.local_fields, *model._meta.local_many_to_many]:
            if field.remote_field is None:
                continue
            read += 1
            if field.swappable_setting:
                continue
            target = field.remote_field.model._meta
            if LAYERS.get(packages[target.app_label], -1) > LAYERS[source]:
                found.append(f"{model._meta.label}.{field.name} -> {target.label}")
    return read, sorted(found)


def test_core_keeps_its_label_config_and_every_other_app_its_package_name():
    packages = _package_of_label()
    assert packages["config"] == "core"
    assert {label for label, package in packages.items() if package in LAYERS} == (
        set(LAYERS) - {"core", "web", "api", "gridwms"}
    ) | {"config", "web", "api"}


def test_no_model_points_to_a_model_of_an_app_in_a_higher_layer():
    read, found = relations_running_up()
    assert read > 30  # the models' relations were found and read
    unexpected = [f for f in found if f not in KNOWN_RELATIONS]
    assert not unexpected, "relations running up the layers:\n" + "\n".join(
        f"  {f}" for f in unexpected
    )


def test_every_known_relation_still_runs_up_else_it_leaves_the_list():
    gone = sorted(KNOWN_RELATIONS - set(relations_running_up()[1]))
    assert not gone, "fixed: remove from KNOWN_RELATIONS in tests/test_layers.py:\n" + "\n".join(
        f"  {f}" for f in gone
    )


# --- the top layer -----------------------------------------------------------------------------

TOP = ("web", "api")


def test_web_and_api_are_the_top_layer_of_apps_and_nothing_below_imports_them():
    apps_layers = {app: layer for app, layer in LAYERS.items() if app != "gridwms"}
    assert LAYERS["web"] == LAYERS["api"] == max(apps_layers.values()) < LAYERS["gridwms"]
    into_top = [
        (f, line, m)
        for f, line, m in offences()
        if m.split(".")[0] in TOP and (f, m) not in KNOWN_OFFENCES
    ]
    assert not into_top, "imports of the pages or the API from below them:\n" + "\n".join(
        f"  {f}:{line} -> {m}" for f, line, m in into_top
    )


def test_web_and_api_may_import_each_other():
    imports = {
        (app, m.split(".")[0])
        for app, path in app_sources()
        if app in TOP
        for _line, m in imported_modules(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert ("web", "api") in imports or ("api", "web") in imports  # and no offence is counted
    assert not [o for o in offences() if o[0].split("/")[0] in TOP]


# --- headless domain apps ----------------------------------------------------------------------

DOMAIN_APPS = sorted(app for app, layer in LAYERS.items() if layer < LAYERS["web"])
# The pilot-side client: a standard-library program the pilot runs on the worker node, not a
# part of the server's apps.
NOT_SERVER_CODE = ("pilots/client/",)
# Modules (and their submodules) of pages, API views, serializers, forms and the admin.
PRESENTATION_MODULES = (
    "django.forms",
    "django.contrib.admin",
    "django.views.generic",
    "rest_framework.viewsets",
    "rest_framework.serializers",
    "rest_framework.generics",
    "rest_framework.views",
)
PRESENTATION_NAMES = (
    "django.shortcuts.render",
    "django.template.response.TemplateResponse",
    "django.template.response.SimpleTemplateResponse",
)
# A class deriving from one of these (by its base's name) is a view, a viewset or an admin.
PRESENTATION_BASES = ("View", "ViewSet", "ModelAdmin")
# Files still being moved to web/ and api/ by their owners; to be emptied when they have gone.
PRESENTATION_STILL_MOVING: set[str] = set()


def _presentation_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    def presentation(name: str) -> bool:
        return name in PRESENTATION_NAMES or any(
            name == m or name.startswith(m + ".") for m in PRESENTATION_MODULES
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if presentation(alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if presentation(node.module) or presentation(full):
                    yield node.lineno, full


def _presentation_classes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if name.endswith(PRESENTATION_BASES):
                    yield node.lineno, f"class {node.name}({name})"


def presentation_in_domain_apps() -> list[tuple[str, int, str]]:
    """(file, line, what) of every view, template rendering, viewset, serializer, form or admin
    in the domain apps' sources (migrations, tests and the pilot's client excepted)."""
    found = []
    for app, path in app_sources():
        rel = path.relative_to(ROOT).as_posix()
        if app not in DOMAIN_APPS or rel.startswith(NOT_SERVER_CODE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for line, what in [*_presentation_imports(tree), *_presentation_classes(tree)]:
            found.append((rel, line, what))
    return sorted(found)


def test_the_check_for_presentation_finds_each_kind():
    source = (
        "from django import forms\n"
        "from django.contrib import admin\n"
        "import rest_framework.serializers\n"
        "from rest_framework.viewsets import ModelViewSet\n"
        "from django.shortcuts import get_object_or_404, render\n"
        "from django.template.response import TemplateResponse\n"
        "class A(admin.ModelAdmin): pass\n"
        "class B(APIView): pass\n"
        "class C(GenericViewSet): pass\n"
        "from django.db import models\n"
        "class D(models.Model): pass\n"
    )
    tree = ast.parse(source)
    found = [what for _line, what in [*_presentation_imports(tree), *_presentation_classes(tree)]]
    assert found == [
        "django.forms",
        "django.contrib.admin",
        "rest_framework.serializers",
        "rest_framework.viewsets.ModelViewSet",
        "django.shortcuts.render",
        "django.template.response.TemplateResponse",
        "class A(ModelAdmin)",
        "class B(APIView)",
        "class C(GenericViewSet)",
    ]


def test_the_domain_apps_hold_no_view_template_rendering_viewset_serializer_form_or_admin():
    assert set(DOMAIN_APPS) >= {"core", "shares", "matcher", "simulation"}
    found = [o for o in presentation_in_domain_apps() if o[0] not in PRESENTATION_STILL_MOVING]
    assert not found, "presentation in the domain apps (its place is web/ or api/):\n" + "\n".join(
        f"  {f}:{line} {what}" for f, line, what in found
    )


def test_every_file_still_moving_still_holds_presentation_else_it_leaves_the_list():
    holding = {f for f, _line, _what in presentation_in_domain_apps()}
    gone = sorted(PRESENTATION_STILL_MOVING - holding)
    assert not gone, "moved: remove from PRESENTATION_STILL_MOVING in tests/test_layers.py:\n" + (
        "\n".join(f"  {f}" for f in gone)
    )
