"""The extension points are the stores of core/registry.py and nothing else: no module keeps a
public module-level empty list, dict or set for other modules to fill at import (a private one,
`_name`, is that module's own cache) (docs/developer-guide.md, Where code goes)."""

from __future__ import annotations

import ast

from core import cycles, gdpconfig, metrics, registry
from tests.test_layers import ROOT, app_sources


def _empty_container(node: ast.expr | None) -> bool:
    if isinstance(node, ast.List | ast.Dict | ast.Set):
        return not (getattr(node, "elts", None) or getattr(node, "keys", None))
    return (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) in {"list", "dict", "set"}
        and not node.args
    )


def module_level_stores() -> list[str]:
    found = []
    for _app, path in app_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign):
                names, value = [getattr(t, "id", "") for t in node.targets], node.value
            elif isinstance(node, ast.AnnAssign):
                names, value = [getattr(node.target, "id", "")], node.value
            else:
                continue
            if _empty_container(value) and not all(n.startswith("_") for n in names):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return found


def test_only_the_registry_module_declares_stores_for_other_modules_to_fill():
    stores = module_level_stores()
    assert any(s.startswith("core/registry.py:") for s in stores)  # the scan sees them
    assert [s for s in stores if not s.startswith("core/registry.py:")] == []


def test_the_cycles_parameters_and_collectors_are_the_registrys_stores():
    assert cycles.CYCLES is registry.CYCLES
    assert gdpconfig.REGISTRY is registry.PARAMETERS
    assert metrics.COLLECTORS is registry.METRICS_COLLECTORS
    assert set(registry.STORES) == {"cycles", "parameters", "metrics_collectors"}


def test_every_app_fills_the_registry_once_django_is_ready():
    assert "director" in registry.CYCLES  # pilots
    assert "SimulatedPilotSeconds" in registry.PARAMETERS  # simulation, the top domain app
    assert any("matcher" in name for name in registry.METRICS_COLLECTORS)
