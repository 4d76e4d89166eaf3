"""The docs name files by their path in the repository, never by where one machine keeps them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|tmp|Users|mnt|srv)/")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").glob("*.py"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_it_names_paths_relative_to_the_repository(path: Path) -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "absolute paths of one machine:\n" + "\n".join(hits)


def test_the_bench_texts_are_in_the_repository() -> None:
    import json

    texts = json.loads((ROOT / "bench" / "texts.json").read_text(encoding="utf-8"))
    assert {len(texts["short"]), len(texts["medium"]), len(texts["long"])} == {63, 398, 1974}
