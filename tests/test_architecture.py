"""The package's import graph: no cycles (function-level and type-checking imports included), imports
that point down the layers of ``LAYERS`` (the module map in docs/development.md), no private names imported across
modules, and ``__init__`` files that only re-export."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "twolayer"
PACKAGE = SRC.name


def module_names() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = module_names()


def _target(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    anchor = parts if MODULES[module].name == "__init__.py" else parts[:-1]
    anchor = anchor[: len(anchor) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def _owner(name: str) -> str | None:
    """The module that ``name`` (a module or a module attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str):
    """``(imported module, imported name or None)`` for every import statement of ``module``,
    at any depth (function-level and TYPE_CHECKING imports count)."""
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield _owner(alias.name), None
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, node)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in MODULES:
                    yield full, None
                else:
                    yield _owner(target), alias.name


def import_graph() -> dict[str, set[str]]:
    return {m: {t for t, _ in imports(m) if t and t != m} for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


# Layers, lowest first: a module may import modules of its own layer and of the layers below (docs/development.md's
# module map). Every module of the package must be listed (a prefix ``data.`` covers a package).
LAYERS = {
    "foundation": ["registry", "errors", "defaults", "version", "backend", "numerics", "seed_keys", "clocks", "fileio",
                   "fields", "limits", "extras", "events", "table", "plotting", "provenance", "claims_file",
                   "interrupts"],
    "model": ["activations", "losses", "logloss", "nets", "problem", "population", "init", "theory", "theory."],
    "data and observables": ["data", "data.", "observe", "observe."],
    "trainer": ["train", "train."],
    "config": ["config"],
    "store": ["store", "stored", "checkpoint", "lock"],
    "results": ["labelled", "quickplot", "tracking", "explore", "explore."],
    "api": ["api"],
    "sweeps": ["sweep", "sweep."],
    "claims": ["claims", "claims."],
    "papers": ["papers", "papers."],
    "report": ["report", "report."],
    "command line": ["cli", "cli."],
    "package": [""],
}


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of a module (``twolayer.`` stripped): an exact entry, else the longest
    ``prefix.`` entry that matches."""
    name = module.removeprefix(PACKAGE + ".") if module != PACKAGE else ""
    best = None
    for index, (_, entries) in enumerate(LAYERS.items()):
        for entry in entries:
            if name == entry or (entry.endswith(".") and name.startswith(entry)):
                length = len(entry) + (1000 if name == entry else 0)  # exact entries win over prefixes
                if best is None or length > best[0]:
                    best = (length, index)
    if best is None:
        raise KeyError(module)
    return best[1]


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if _safe_layer(m) is None]
    assert not missing, f"add these modules to LAYERS (and to the module map in docs/development.md): {missing}"


def _safe_layer(module):
    try:
        return layer_of(module)
    except KeyError:
        return None


def test_imports_point_down_the_layers():
    names = list(LAYERS)
    upward = [f"{m} ({names[layer_of(m)]}) imports {t} ({names[layer_of(t)]})"
              for m, targets in import_graph().items() for t in targets
              if _safe_layer(m) is not None and _safe_layer(t) is not None and layer_of(t) > layer_of(m)]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_cycle_detector_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_import_graph_has_no_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_private_name_is_imported_from_another_module():
    offenders = [f"{m} imports {name} from {t}" for m in MODULES for t, name in imports(m)
                 if name and name.startswith("_") and not name.startswith("__") and t != m]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("module", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_init_files_only_re_export(module):
    """An ``__init__`` holds a docstring, imports, ``__all__`` and nothing that defines behaviour."""
    tree = ast.parse(MODULES[module].read_text())
    allowed = (ast.Import, ast.ImportFrom, ast.Expr, ast.Assign, ast.AnnAssign)
    lazy = ("__getattr__", "__dir__")  # PEP 562: re-exports loaded on first access
    bad = [getattr(node, "name", type(node).__name__) for node in tree.body
           if not (isinstance(node, allowed) or (isinstance(node, ast.FunctionDef) and node.name in lazy))
           or (isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant))]
    assert not bad, f"{module}/__init__.py defines {bad}"


# -- docstrings -------------------------------------------------------------------------------------

# the paper modules document their experiments, claims and figures by their registrations
PAPER_MODULES = ("papers.",)


def public_definitions():
    """``(module, name, node)`` of every public top-level function and class outside the paper modules."""
    for module, path in MODULES.items():
        short = module.removeprefix(PACKAGE + ".")
        if short.startswith(PAPER_MODULES):
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                yield module, node.name, node


def test_public_functions_and_classes_have_docstrings():
    missing = [f"{m}.{name}" for m, name, node in public_definitions() if not ast.get_docstring(node)]
    assert not missing, "add a docstring to: " + ", ".join(missing)


# the public API: twolayer.* and the entry points of each layer document their arguments and returns
API = {"api": ["run", "open_run"], "config": ["load_config"], "labelled": ["to_xarray", "runs"],
       "quickplot": ["plot"], "explore.site": ["explore"], "claims.reproduce": ["reproduce"],
       "sweep.grid": ["run_sweep", "load_sweep"], "numerics": ["safe_norm"]}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in API.items() for n in names])
def test_api_functions_document_arguments_and_returns(module, name):
    tree = ast.parse(MODULES[f"{PACKAGE}.{module}"].read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    doc = ast.get_docstring(node) or ""
    assert "Arguments:" in doc and "Returns:" in doc, f"{module}.{name}: document Arguments: and Returns:"
    for arg in [a.arg for a in node.args.args + node.args.kwonlyargs if not a.arg.startswith("_")]:
        assert arg in doc, f"{module}.{name}: argument {arg!r} is not documented"
