"""The layers contract (pyproject.toml, docs/architecture.md) and no import circles.

`lint-imports` checks that no lower layer imports a higher one; a second test
proves it can fail by adding a wrong import to a copy of the tree. The circle
check walks grimp's import graph (the one import-linter builds), type-only
imports included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ttsplatform", "accounts", "tts", "infra")
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_it_keeps_the_layers_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


#: One wrong import per contract, all in one copy of the tree (one lint run): each contract must break.
WRONG_IMPORTS = [
    ("tts/catalogue/voices.py", "from tts.api import elevenlabs", "Capability packages never import"),
    ("tts/text/segment.py", "from tts.models import Voice", "Inference, text and audio"),
    ("infra/env.py", "from accounts.models import Tenant", "Infrastructure imports no app"),
    ("accounts/quota.py", "from tts.models import SynthesisRecord", "Accounts never read"),
    ("tts/catalogue/storage.py", "from tts.synthesis import pipeline", "The catalogue never imports"),
    ("tts/pronunciation/apply.py", "from tts.synthesis import run", "Pronunciation never imports"),
    ("tts/synthesis/cache/audio.py", "from tts.jobs import runner", "Synthesis never imports"),
    ("tts/jobs/slots.py", "from tts.usage import history", "Jobs never import"),
    ("tts/synthesis/alignment/timeline.py", "from tts.synthesis.runs import run", "Synthesis's rooms"),
    ("tts/synthesis/stages/parse.py", "from tts.synthesis.stages import deliver", "The stages import in stage order"),
    ("tts/api/openai.py", "from tts.api.websocket import consumers", "The REST API never imports"),
]


def test_it_fails_when_a_lower_layer_imports_a_higher_one(tmp_path: Path) -> None:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, wrong_import, _ in WRONG_IMPORTS:
        path = tmp_path / module
        path.write_text(path.read_text() + f"\n{wrong_import}  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    listing = " ".join(result.stdout.split())  # the contracts' names, each followed by KEPT or BROKEN
    for _, _, contract in WRONG_IMPORTS:
        status = re.search(r"\b(KEPT|BROKEN)\b", listing[listing.index(contract) :])
        assert status is not None and status.group(1) == "BROKEN", (contract, result.stdout)


#: Modules above the capability packages: they import a package's entry point (its __init__),
#: never one of its modules. ``tts.apps`` is wiring (it connects the packages' signals), and the
#: routes name the WebSocket consumers.
CAPABILITIES = ("synthesis", "catalogue", "pronunciation", "jobs", "usage", "matching")
WIRING = {"tts.apps", "tts.routing"}


def _reaches_into(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    wrong = []
    for importer in sorted(graph.modules):
        parts = importer.split(".")
        own = parts[1] if len(parts) > 1 and parts[0] == "tts" and parts[1] in CAPABILITIES else None
        if importer in WIRING:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            bits = imported.split(".")
            if len(bits) > 2 and bits[0] == "tts" and bits[1] in CAPABILITIES and bits[1] != own:
                wrong.append((importer, imported))
    return wrong


def test_code_outside_a_package_imports_only_its_entry_point() -> None:
    assert _reaches_into(grimp.build_graph(*PACKAGES)) == []


def test_its_entry_point_check_finds_a_module_import() -> None:
    graph = grimp.ImportGraph()
    graph.add_import(importer="tts.api.jobs", imported="tts.jobs")
    graph.add_import(importer="tts.api.jobs", imported="tts.jobs.runner")
    graph.add_import(importer="tts.jobs.actions", imported="tts.jobs.runner")
    assert _reaches_into(graph) == [("tts.api.jobs", "tts.jobs.runner")]


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child) & modules))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _through_entry_points(graph: grimp.ImportGraph, packages: set[str]) -> grimp.ImportGraph:
    """The graph with each import of a package's ``__init__`` replaced by the imports that
    ``__init__`` makes of its own modules (recursively): a circle through an entry point is a circle."""
    flat = grimp.ImportGraph()

    def targets(module: str, seen: set[str]) -> set[str]:
        if module not in packages:
            return {module}
        found: set[str] = set()
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(module + ".") and imported not in seen:
                found |= targets(imported, seen | {imported})
        return found

    for importer in graph.modules:
        if importer in packages:
            continue
        flat.add_module(importer)
        for imported in graph.find_modules_directly_imported_by(importer):
            for target in targets(imported, {imported}) - {importer}:
                flat.add_import(importer=importer, imported=target)
    return flat


def test_it_has_no_import_circle_anywhere() -> None:
    graph = grimp.build_graph(*PACKAGES)
    packages = {m for m in graph.modules if (ROOT / m.replace(".", "/") / "__init__.py").exists()}
    flat = _through_entry_points(graph, packages)
    assert _cycles(flat, set(flat.modules) - packages) == []


def test_its_circle_check_sees_through_an_entry_point() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p", "p.a"), ("q.b", "p"), ("p.a", "q.b")]:
        graph.add_import(importer=importer, imported=imported)
    flat = _through_entry_points(graph, {"p", "q"})
    assert _cycles(flat, {"p.a", "q.b"}) == [["p.a", "q.b"]]


def test_its_circle_check_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]
