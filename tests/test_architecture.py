"""The layers of DESIGN.md, kept by their imports: arrows only point down.

core      → the standard library, itself, and ``rfc8785`` (the one JCS library; see
            docs/ledger.md, "Decisions")
formats   → core
storage   → core
embedding → core
service   → core, formats, storage, embedding
adapters  → service, core, formats, and config (the composition root) — never storage
config    → anything: it is where stores, embedders and the facade are put together
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import troth

PACKAGE = Path(troth.__file__).parent
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

# Which troth layers each layer may import (itself is always allowed).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "formats": frozenset({"core"}),
    "storage": frozenset({"core"}),
    "embedding": frozenset({"core"}),
    "service": frozenset({"core", "formats", "storage", "embedding"}),
    "adapters": frozenset({"service", "core", "formats", "config"}),
}
# The only libraries outside the standard library the core may use.
CORE_LIBRARIES = frozenset({"rfc8785"})
# Written-down exceptions: (module, imported layer, why).
EXCEPTIONS = {
    # ``Memory.open`` is the library's own entry point, so it asks the composition root
    # for the embedded default store; the import is inside the method, not at load time.
    ("service/memory.py", "config"),
}


def _imports(path: Path) -> set[str]:
    """Absolute module names a file imports, at load time or inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _modules(layer: str) -> list[Path]:
    found = [PACKAGE / f"{layer}.py"] if (PACKAGE / f"{layer}.py").exists() else []
    return found + sorted((PACKAGE / layer).rglob("*.py"))


def _crossings(layer: str) -> list[str]:
    allowed = MAY_IMPORT[layer] | {layer}
    out = []
    for path in _modules(layer):
        module = path.relative_to(PACKAGE).as_posix()
        for name in sorted(_imports(path)):
            parts = name.split(".")
            if parts[0] != "troth":
                continue
            target = parts[1] if len(parts) > 1 else "troth"
            target = target.removesuffix(".py")
            if target not in allowed and (module, target) not in EXCEPTIONS:
                out.append(f"{module} imports {name}")
    return out


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    assert _modules(layer), f"no modules found for {layer}"
    assert _crossings(layer) == []


def test_the_core_uses_only_the_standard_library_and_one_jcs_library() -> None:
    outside = {
        f"{path.relative_to(PACKAGE).as_posix()} imports {name}"
        for path in _modules("core")
        for name in _imports(path)
        if name.split(".")[0] not in STDLIB | CORE_LIBRARIES | {"troth"}
    }
    assert outside == set()


def test_adapters_reach_storage_only_through_the_composition_root() -> None:
    reaching = [
        f"{path.name} imports {name}"
        for path in _modules("adapters")
        for name in _imports(path)
        if name == "troth.storage" or name.startswith("troth.storage.")
    ]
    assert reaching == []


def test_written_down_exceptions_are_still_needed() -> None:
    for module, target in EXCEPTIONS:
        imported = {n.split(".")[1] for n in _imports(PACKAGE / module) if n.count(".") >= 1}
        assert target in imported, f"{module} no longer imports {target}; drop the exception"
