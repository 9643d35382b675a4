"""The import graph of mtpsim: no cycles, torch never on the simulator's path, and
the torch code layered as torchkit <- calibration <- verify.

The graph is read statically (ast) from every module under mtpsim/: `import` and `from ... import`
at any depth (function-level, lazy imports included; relative ones resolved; `from pkg import
sub` is an edge to the submodule), and string constants that name an mtpsim module, which the
package imports by name (mtpsim/__init__.py's lazy attributes, commands' `torch_command(...)`).
Importing a module also runs its parent packages' __init__, so torch reachability follows
parents too; cycles do not count them (a package re-exporting its submodules is no cycle).

Lazy imports count, with one exception: from `mtpsim.commands` (the command line's handlers)
only module-level imports are followed, because each command imports what it needs when it
runs and `calibrate` / `verify` import torch on purpose. A cost-model module importing calibration/ even lazily is caught by
`test_simulator_imports_no_torch_package`, whether or not that module imports torch.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_PACKAGES = ("mtpsim.torchkit", "mtpsim.calibration", "mtpsim.verify")
# the simulator's import path, plus the other modules documented as importable without torch
TORCH_FREE = ("mtpsim", "mtpsim.cli", "mtpsim.commands", "mtpsim.run", "mtpsim.sim", "mtpsim.sim.*", "mtpsim.costs",
              "mtpsim.costs.*", "mtpsim.scenario", "mtpsim.sweep", "mtpsim.resolve", "mtpsim.schema", "mtpsim.acceptance_schema",
              "mtpsim.engine_schema", "mtpsim.layout_schema",
              "mtpsim.catalog", "mtpsim.catalog_lookup", "mtpsim.catalog_files",
              "mtpsim.specs", "mtpsim.hardware_spec", "mtpsim.runfolder", "mtpsim.checks", "mtpsim.layout_checks",
              "mtpsim.acceptance_checks", "mtpsim.results", "mtpsim.plots",
              "mtpsim.report", "mtpsim.cost_command", "mtpsim.trace", "mtpsim.designs", "mtpsim.design_checks",
              "mtpsim.acceptance",
              "mtpsim.acceptance_histogram", "mtpsim.memory",
              "mtpsim.tracefiles", "mtpsim.tracefiles.*",
              "mtpsim.shrink", "mtpsim.hfconfig", "mtpsim.hfconfig.*",
              "mtpsim.calibration.aiconfigurator", "mtpsim.calibration.aic_rows", "mtpsim.calibration.aic_dtypes",
              "mtpsim.calibration.grid", "mtpsim.verify.compare")
DISPATCHER = "mtpsim.commands"  # the handlers cli.py dispatches to
# what verification may use of calibration: its public entry points (module -> names)
VERIFY_USES_OF_CALIBRATION = {"mtpsim.calibration.command": {"write_profile"},
                              "mtpsim.calibration.level": {"machine_level"}}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str            # an mtpsim module, or a third-party top-level package ("torch")
    names: tuple[str, ...]  # names taken from the target by `from target import ...`
    lazy: bool             # inside a function body, or imported by name when called


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package at `package_dir`."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


class _Imports(ast.NodeVisitor):
    def __init__(self, name: str, is_package: bool, known: set[str]):
        self.name, self.known, self.depth, self.edges = name, known, 0, []
        self.package = name if is_package else name.rpartition(".")[0]
        self.root = name.split(".")[0]

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, target: str, names=(), lazy=None):
        self.edges.append(Edge(self.name, target, tuple(names), self.depth > 0 if lazy is None else lazy))

    def _module(self, dotted: str) -> str:
        """The longest known module prefix of `dotted`, else its third-party top-level package."""
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in self.known:
                return ".".join(parts[:i])
        return parts[0]

    def visit_Import(self, node):
        for alias in node.names:
            self._add(self._module(alias.name))

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            up = self.package.split(".")[: len(self.package.split(".")) - (node.level - 1)]
            base = ".".join(up + ([node.module] if node.module else []))
        rest = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in self.known:
                self._add(sub)
            else:
                rest.append(alias.name)
        if rest:
            self._add(self._module(base), rest)

    def visit_Constant(self, node):
        # a submodule imported by name (importlib) when the code runs; the bare package name is
        # also the distribution's ("mtpsim" in metadata.version), so only dotted names count
        if isinstance(node.value, str) and "." in node.value and node.value != self.name and node.value in self.known:
            self._add(node.value, lazy=True)


def import_graph(package_dir: Path) -> dict[str, list[Edge]]:
    """Module -> its import edges, for every module of the package at `package_dir`."""
    found = modules(package_dir)
    graph = {}
    for name, path in found.items():
        visitor = _Imports(name, path.name == "__init__.py", set(found))
        visitor.visit(ast.parse(path.read_text(), str(path)))
        graph[name] = visitor.edges
    return graph


def parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (or a module importing itself),
    over every explicit edge between the package's modules."""
    succ = {m: sorted({e.target for e in es if e.target in graph}) for m, es in graph.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in succ[v]:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def reachable(graph: dict[str, list[Edge]], roots: list[str]) -> dict[str, str | None]:
    """Module -> the module it was first reached from, over what importing `roots` can import:
    every edge and parent package, except the dispatcher's lazy ones."""
    came = dict.fromkeys(roots)
    todo = deque(roots)
    while todo:
        m = todo.popleft()
        nxt = parents(m) + [e.target for e in graph[m] if e.target in graph and not (m == DISPATCHER and e.lazy)]
        for t in nxt:
            if t not in came:
                came[t] = m
                todo.append(t)
    return came


def chain(came: dict[str, str | None], m: str) -> str:
    path = [m]
    while came[path[-1]] is not None:
        path.append(came[path[-1]])
    return " <- ".join(path)


def torch_free_roots(graph) -> list[str]:
    out = [m for m in graph if any(m == p or (p.endswith(".*") and m.startswith(p[:-1])) for p in TORCH_FREE)]
    missing = [p for p in TORCH_FREE if not p.endswith("*") and p not in graph]
    assert not missing, f"TORCH_FREE names modules that do not exist: {missing}"
    return sorted(out)


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


GRAPH = import_graph(ROOT / "mtpsim")


# ----------------------------------------------------------------------------- the checks

def test_no_import_cycles():
    found = cycles(GRAPH)
    assert found == [], "import cycles among mtpsim modules:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_torch_not_reachable_from_the_simulator():
    came = reachable(GRAPH, torch_free_roots(GRAPH))
    bad = [chain(came, m) for m in sorted(came) if any(e.target == "torch" for e in GRAPH[m])]
    assert bad == [], "torch reachable from the simulator's import path:\n" + "\n".join(bad)


def test_simulator_imports_no_torch_package():
    """Nothing outside torchkit / calibration / verify (the cli's dispatch aside) imports them,
    even lazily: the cost model reads profiles through costs/ alone."""
    bad = [f"{e.source} -> {e.target}" for es in GRAPH.values() for e in es
           if not any(in_package(e.source, p) for p in TORCH_PACKAGES) and e.source != DISPATCHER
           and any(in_package(e.target, p) for p in TORCH_PACKAGES)]
    assert bad == [], "the simulator imports torch code:\n" + "\n".join(bad)


def test_torch_code_is_layered():
    """torchkit imports neither calibration nor verify; calibration never imports verify;
    verify uses calibration only through its public entry points."""
    bad = []
    for es in GRAPH.values():
        for e in es:
            if in_package(e.source, "mtpsim.torchkit") and (in_package(e.target, "mtpsim.calibration")
                                                            or in_package(e.target, "mtpsim.verify")):
                bad.append(f"{e.source} -> {e.target}")
            if in_package(e.source, "mtpsim.calibration") and in_package(e.target, "mtpsim.verify"):
                bad.append(f"{e.source} -> {e.target}")
            if in_package(e.source, "mtpsim.verify") and in_package(e.target, "mtpsim.calibration") \
                    and not (e.names and set(e.names) <= VERIFY_USES_OF_CALIBRATION.get(e.target, set())):
                bad.append(f"{e.source} -> {e.target} {e.names or ''}")
    assert bad == [], "imports against the layering:\n" + "\n".join(bad)


def test_simulator_runs_without_importing_torch():
    """At run time too: the simulator's modules imported, a calibrated profile loaded (its glue
    fit runs the cost model's lazy imports) and one pass priced, and torch never imported."""
    names = torch_free_roots(GRAPH)
    code = ("import importlib, sys, numpy as np, mtpsim, mtpsim.run, mtpsim.sim, mtpsim.costs.calibrated\n"
            f"for name in {names!r}: importlib.import_module(name)\n"
            "from mtpsim.catalog import load_hardware, load_model\n"
            "from mtpsim.costs import Pricer, PassShape\n"
            "from mtpsim.costs.calibrated import CalibratedCosts\n"
            "from mtpsim.costs.profile import PROFILES_DIR\n"
            "costs = CalibratedCosts.from_profile(PROFILES_DIR / 'cpu', load_hardware('cpu'))\n"
            "assert costs.glue, 'the cpu profile fits layer glue'\n"
            "Pricer.of(load_model('deepseek-v3'), load_hardware('cpu'), costs).price("
            "PassShape('decode', 'target', 1, 1), np.ones(2, int), np.full(2, 100))\n"
            "assert 'torch' not in sys.modules, 'the simulator imported torch'\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ----------------------------------------------------------------------------- the reader itself

def test_reader_sees_lazy_relative_and_by_name_imports(tmp_path):
    """The checks above are only as good as the graph: a planted package with a lazy import
    cycle, a relative import and an import by name, read as such."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('LAZY = {"run": ("pkg.b", "run")}\n')
    (pkg / "a.py").write_text("import os\nfrom pkg import b\n")
    (pkg / "b.py").write_text("def run():\n    import torch\n    from pkg.sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from .. import a\nfrom ..b import run\n")
    graph = import_graph(pkg)
    edges = {(e.source, e.target, e.lazy) for es in graph.values() for e in es}
    assert {("pkg", "pkg.b", True), ("pkg.a", "pkg.b", False), ("pkg.b", "torch", True),
            ("pkg.b", "pkg.sub.c", True), ("pkg.sub.c", "pkg.a", False), ("pkg.sub.c", "pkg.b", False)} <= edges
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    came = reachable(graph, ["pkg.sub.c"])
    assert "pkg" in came and chain(came, "pkg.b") == "pkg.b <- pkg.sub.c"


def _direct_reach(root: str) -> dict[str, str | None]:
    """What `root` imports, at any depth, along its own import edges (the package's lazy names
    in mtpsim/__init__.py, which reach everything, left out): module -> where it was reached from."""
    came, todo = {root: None}, deque([root])
    while todo:
        m = todo.popleft()
        for e in GRAPH[m]:
            if e.target in GRAPH and e.target != "mtpsim" and e.target not in came:
                came[e.target] = m
                todo.append(e.target)
    return came


def _below(upper: tuple[str, ...], lower: tuple[str, ...], allowed: set[tuple[str, str]] = frozenset()) -> list[str]:
    """Chains by which a module of `lower` imports one of `upper` (edges in `allowed` aside)."""
    bad = []
    for root in (m for m in GRAPH if any(in_package(m, p) for p in lower)):
        came = _direct_reach(root)
        for m in came:
            if any(in_package(m, p) for p in upper) and (came[m], m) not in allowed:
                bad.append(chain(came, m))
    return bad


def test_designs_sit_below_the_cost_model():
    """A design is data (its passes, PassShape included): it prices nothing and imports no cost model."""
    bad = _below(("mtpsim.costs",), ("mtpsim.designs", "mtpsim.design_checks"))
    assert bad == [], "designs import the cost model:\n" + "\n".join(bad)


# edges from the loader into the simulator allowed for now (none: the trace reader moved to tracefiles/)
LOADER_MAY_IMPORT: set[tuple[str, str]] = set()
SCENARIO_LOADER = ("mtpsim.scenario", "mtpsim.sweep", "mtpsim.resolve", "mtpsim.schema", "mtpsim.checks", "mtpsim.layout_checks",
                   "mtpsim.acceptance_checks",
                   "mtpsim.catalog", "mtpsim.catalog_lookup", "mtpsim.catalog_files", "mtpsim.specs",
                   "mtpsim.hardware_spec",
                   "mtpsim.files", "mtpsim.textfiles", "mtpsim.yamlfiles", "mtpsim.csvfiles",
                   "mtpsim.advice", "mtpsim.advice_sweep",
                   "mtpsim.engine_advice", "mtpsim.budget_advice", "mtpsim.limits", "mtpsim.engines",
                   "mtpsim.engine_releases",
                   "mtpsim.engine_memory",
                   "mtpsim.hfconfig", "mtpsim.tracefiles", "mtpsim.pools", "mtpsim.sections", "mtpsim.workload_schema",
                   "mtpsim.acceptance_schema", "mtpsim.engine_schema", "mtpsim.layout_schema", "mtpsim.cache_settings",
                   "mtpsim.overrides")


def test_the_scenario_loader_sits_below_the_simulator():
    """Loading and checking a scenario needs no simulator and no runner: they read the scenario."""
    bad = _below(("mtpsim.sim", "mtpsim.run", "mtpsim.runfolder"), SCENARIO_LOADER, LOADER_MAY_IMPORT)
    assert bad == [], "the scenario loader imports the simulator:\n" + "\n".join(bad)
    stale = [f"{a} -> {b}" for a, b in LOADER_MAY_IMPORT if not any(e.target == b for e in GRAPH[a])]
    assert stale == [], "no longer imported, delete from LOADER_MAY_IMPORT: " + ", ".join(stale)


def test_overrides_sit_below_the_scenario_loader():
    """--set's overrides edit a scenario's mappings and validate nothing (the loader hands them its
    check): they import neither the loader nor the schema it validates by."""
    bad = _below(("mtpsim.scenario", "mtpsim.resolve", "mtpsim.schema", "mtpsim.checks"), ("mtpsim.overrides",))
    assert bad == [], "the overrides import the scenario loader:\n" + "\n".join(bad)


def test_how_long_a_point_takes_sits_below_its_three_users():
    """heaviness.py is the one rule run, recommend and search warn by: it imports none of them, and
    run imports no search code for it (the search section's schema, which every scenario holds, aside)."""
    section = {("mtpsim.schema", "mtpsim.search.bounds")}
    bad = _below(("mtpsim.run", "mtpsim.recommend", "mtpsim.search"), ("mtpsim.heaviness",), section)
    bad += _below(("mtpsim.recommend", "mtpsim.search"), ("mtpsim.run",), section)
    assert bad == [], "imports against the layering:\n" + "\n".join(bad)


def test_no_module_takes_another_modules_private_names():
    """What prices or sizes (costs/, memory.py) and everything else use each other's public names
    only: `from mtpsim.x import _helper` reaches into x's internals."""
    bad = [f"{e.source} takes {e.target}.{n}" for es in GRAPH.values() for e in es
           if e.target in GRAPH and e.target != e.source for n in e.names if n.startswith("_") and not n.startswith("__")]
    assert bad == [], "\n".join(bad)
