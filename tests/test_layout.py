"""The package's shape: an ordinary install runs from any folder with the shipped tasks and configs, and no module
imports one that imports it back."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SRC = REPO / "src" / "benchmark"


def test_an_installed_wheel_runs_the_default_from_any_folder(tmp_path):
    wheels, site, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    def pip(*args):
        done = subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]

    pip("wheel", "--no-deps", "--no-build-isolation", str(REPO), "-w", str(wheels))
    pip("install", "--no-deps", "--target", str(site), *map(str, wheels.glob("*.whl")))
    assert (site / "benchmark" / "conf" / "config.yaml").is_file()
    assert (site / "benchmark" / "conf" / "task" / "diasafety.yaml").is_file()  # task/ points at tasks/ in a checkout
    assert (site / "benchmark" / "tasks" / "toxicchat.yaml").is_file()
    assert (site / "benchmark" / "judges" / "validity.json").is_file()  # the judges' figures travel with them
    assert (site / "benchmark" / "bundled" / "diasafety" / "LICENSE").is_file()
    # no data folder: the default reads the DiaSafety test split the package carries
    env = {**{k: v for k, v in os.environ.items() if k != "BENCHMARK_DATA_ROOT"}, "PYTHONPATH": str(site),
           "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "benchmark", "limit=10", "progress=false"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads(next((elsewhere / "results").glob("*/*/*/scorecard.json")).read_text())
    assert card["task"]["name"] == "diasafety" and card["run"]["git_commit"] is None
    assert card["dataset"]["source"] == "bundled:diasafety/test.json" and card["dataset"]["sha256_matches_task"]
    here = subprocess.run([sys.executable, "-c", "import benchmark.paths as p; print(p.CONF_DIR)"], cwd=elsewhere,
                          env=env, capture_output=True, text=True, timeout=60)
    assert Path(here.stdout.strip()) == site / "benchmark" / "conf"


def _imports(path: Path, package: str) -> set[str]:
    """The suite's modules a module imports, anywhere in it (module-level or inside a function)."""
    module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            found |= {n for n in names if _module_file(n)} | ({target} if _module_file(target) else set())
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if _module_file(a.name)}
    return {f for f in found if f.startswith(package) and f != module}


def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "benchmark":
        return None
    base = SRC.parent.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of a module graph (a package's own submodules, which its __init__ may import to declare
    its interface, are not edges back)."""
    found, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph.get(m, ())):
            if t.startswith(m + "."):
                continue
            if state.get(t) == "open":
                found.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "p": {"p.x"}, "p.x": set()}) == [["a", "b", "c", "a"]]
    graph = {}
    for path in SRC.rglob("*.py"):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        graph[module] = _imports(path, "benchmark")
    assert cycles(graph) == []


def _graph() -> dict[str, set[str]]:
    return {".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__"):
            _imports(path, "benchmark") for path in SRC.rglob("*.py")}


# the package's floors, bottom to top (docs/architecture.md draws them): a module imports only from its own floor
# and those below it
# the judging wing (judging/) is one folder whose modules stand on the floors of what they read: the labelled sets
# with the foundations, the step engine with the kinds, panels and measuring with the run, the checks of a submitted
# card's votes and judge figures with the submissions
FLOORS = (
    ("benchmark", "benchmark.paths", "benchmark.files", "benchmark.text", "benchmark.templates", "benchmark.config",
     "benchmark.identity", "benchmark.safe_yaml", "benchmark.compose_cache", "benchmark.data", "benchmark.judging",
     "benchmark.judging.labelled", "benchmark.metrics", "benchmark.cache", "benchmark.progress"),
    ("benchmark.models",),
    ("benchmark.kinds", "benchmark.judging.engine", "benchmark.judging.derived", "benchmark.judging.parsing"),
    ("benchmark.composition",),
    ("benchmark.run", "benchmark.judging.panels", "benchmark.judging.validity", "benchmark.judging.validity_record",
     "benchmark.judging.recheck"),
    ("benchmark.submissions", "benchmark.judging.card_votes", "benchmark.judging.card_figures"),
    ("benchmark.judge",),
    ("benchmark.cli", "benchmark.__main__", "benchmark.submit"),
)
# the one arrow up: the package's face, benchmark.evaluate(), imports the run wing when called (every module below
# imports the package itself, for BenchmarkError)
FACE = {("benchmark", "benchmark.run.evaluate")}


def floor(module: str) -> int | None:
    best = None
    for i, prefixes in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return best[0] if best else None


def test_no_import_runs_back_up_a_floor():
    graph = _graph()
    assert [m for m in sorted(graph) if floor(m) is None] == []  # every module has its floor
    up = [f"{m} (floor {floor(m)}) -> {t} (floor {floor(t)})" for m, targets in sorted(graph.items())
          for t in sorted(targets) if floor(t) is not None and floor(t) > floor(m) and (m, t) not in FACE]
    assert up == []
    assert not (SRC / "detector").exists()  # one judge package: training and evaluation of every trained judge



def test_no_kind_imports_another():
    from benchmark.kinds import KINDS

    modules = {k.__module__ for k in KINDS.values()}
    assert [f"{m} -> {t}" for m, targets in sorted(_graph().items()) if m in modules
            for t in sorted(targets) if t in modules] == []

def test_no_function_of_the_suite_is_over_sixty_lines():
    src = Path(__file__).resolve().parents[1] / "src"
    long = [f"{path.relative_to(src)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted(src.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert long == []


def test_no_class_of_the_suite_is_over_twenty_methods_or_250_lines():
    src = Path(__file__).resolve().parents[1] / "src"
    big = [f"{path.relative_to(src)}:{node.lineno} {node.name} ({len(methods)} methods, {lines} lines)"
           for path in sorted(src.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
           if isinstance(node, ast.ClassDef)
           for methods, lines in [([f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))],
                                   node.end_lineno - node.lineno + 1)]
           if len(methods) > 20 or lines > 250]
    assert big == []


# the modules that import suite modules inside functions, each for a reason docs/architecture.md measures
LAZY = {"__init__.py", "cli/main.py", "models/chat_api.py"}


def test_the_suite_imports_its_own_modules_at_the_top_except_where_measured():
    inner = set()
    for path in SRC.rglob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if (isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("benchmark"))
                            or isinstance(node, ast.Import) and any(a.name.startswith("benchmark") for a in node.names)):
                        inner.add(str(path.relative_to(SRC)))
    assert inner == LAZY
