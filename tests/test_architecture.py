"""The layers of DESIGN.md, kept by their imports: arrows only point down.

core      → the standard library, itself, and ``rfc8785`` (the one JCS library; see
            docs/ledger.md, "Decisions")
formats   → core
storage   → core
embedding → core
service   → core, formats, storage, embedding
adapters  → service, core, formats, and config (the composition root) — never storage
config    → anything: it is where stores, embedders and the facade are put together

And inside the package, whatever the layer:

- no import cycle. The graph has one edge per ``import``/``from … import`` anywhere in a
  module — at load time, under ``TYPE_CHECKING`` or inside a function — to the most specific
  troth module it names (``from troth.formats import pcp`` is an edge to
  ``troth.formats.pcp``; the parent package's ``__init__`` is not counted, as importing a
  submodule only runs it once). A lazy import may close a cycle only if it is written down
  in ``LAZY_CYCLE_EDGES`` with its reason;
- no module touches another module's private member: ``obj._x`` where ``obj`` is not
  ``self`` or ``cls`` and ``_x`` is not a name the module defines itself, and
  ``from m import _x``;
- no class body is over 500 lines.
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


MAX_CLASS_LINES = 500
# Written-down exceptions to the rules inside the package, each with its reason. A test
# below fails once one is no longer needed.
LAZY_CYCLE_EDGES: dict[tuple[str, str], str] = {
    # ``Memory.open`` is the library's own entry point: it asks the composition root, which
    # imports the facade. The import is inside the method, so nothing loads in a circle.
    ("troth.service.memory", "troth.config"): "Memory.open builds through troth.config",
}
LONG_CLASSES: dict[tuple[str, str], str] = {}
# Private names that are public API by the standard library's own convention.
PUBLIC_UNDERSCORED = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})


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


# -- rules inside the package ----------------------------------------------------------


def _all_modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["troth", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _edges(name: str, path: Path, known: set[str]) -> set[str]:
    """The troth modules ``name`` imports: the most specific module each import names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("troth") and target != name:
                out.add(target)
                break  # the most specific module: not also its parents
    return out


def _graph() -> dict[str, set[str]]:
    modules = _all_modules()
    known = set(modules)
    graph = {name: _edges(name, path, known) for name, path in modules.items()}
    for (source, target), _why in LAZY_CYCLE_EDGES.items():
        graph[source].discard(target)
    # A package's ``__init__`` re-exports its modules; a module importing a sibling never
    # runs through it twice, so an edge into an ``__init__`` from its own package is not one.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_written_down_lazy_imports_still_close_a_cycle() -> None:
    modules = _all_modules()
    for source, target in LAZY_CYCLE_EDGES:
        assert target in _edges(source, modules[source], set(modules)), (
            f"{source} no longer imports {target}; drop the exception"
        )
        graph = _graph()
        graph[source].add(target)
        assert _cycles(graph), f"{source} → {target} closes no cycle now; drop the exception"


def _defined_privates(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, assignments, attributes of self."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if n.startswith("_")}


def _private_reaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _defined_privates(tree)
    module = path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else path.name
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.startswith("__") or name in PUBLIC_UNDERSCORED:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if name not in own:
                out.append(f"{module}:{node.lineno} reaches {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append(f"{module}:{node.lineno} imports {alias.name} from {node.module}")
    return out


def test_no_module_reaches_another_modules_private_members() -> None:
    assert [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _private_reaches(path)] == []


def test_the_private_member_check_sees_a_reach(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from troth.formats.pcp import _hidden\n"
        "def f(memory, _given):\n"
        "    self._own = _given._own\n"
        "    return memory._writing, self._own, _given, obj._asdict()\n",
        encoding="utf-8",
    )
    assert sorted(hit.split(" ", 1)[1] for hit in _private_reaches(sample)) == [
        "imports _hidden from troth.formats.pcp",
        "reaches memory._writing",
    ]


def _long_classes() -> dict[tuple[str, str], int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    out[(path.relative_to(PACKAGE).as_posix(), node.name)] = lines
    return out


def test_no_class_body_is_over_500_lines() -> None:
    assert {k: v for k, v in _long_classes().items() if k not in LONG_CLASSES} == {}


def test_written_down_long_classes_are_still_long() -> None:
    long = _long_classes()
    for key in LONG_CLASSES:
        assert key in long, f"{key[1]} in {key[0]} is no longer over 500 lines; drop it"
