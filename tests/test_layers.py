"""The layers contract (pyproject.toml, docs/architecture.md) and no import circles.

`lint-imports` checks that no lower layer imports a higher one; a second test
proves it can fail by adding a wrong import to a copy of the tree. The circle
check walks grimp's import graph (the one import-linter builds), type-only
imports included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

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


@pytest.mark.parametrize(
    ("module", "wrong_import", "contract"),
    [
        ("tts/services/voices.py", "from tts.api import elevenlabs", "Services never import"),
        ("tts/text/segment.py", "from tts.models import Voice", "Inference, text and audio"),
        ("infra/env.py", "from accounts.models import Tenant", "Infrastructure imports no app"),
        ("accounts/quota.py", "from tts.models import SynthesisRecord", "Accounts never read"),
    ],
)
def test_it_fails_when_a_lower_layer_imports_a_higher_one(
    tmp_path: Path, module: str, wrong_import: str, contract: str
) -> None:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{wrong_import}  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and contract in result.stdout


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


def test_it_has_no_import_circle_anywhere() -> None:
    graph = grimp.build_graph(*PACKAGES)
    # Packages import their own modules through __init__ re-exports only where named; a module
    # and its package are not a circle worth reporting unless a real module pair closes it.
    modules = {m for m in graph.modules if not (ROOT / m.replace(".", "/") / "__init__.py").exists()}
    assert _cycles(graph, modules) == []


def test_its_circle_check_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]
