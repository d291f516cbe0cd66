"""What users read cites primary sources or the project's own docs/method.md, never working notes that are not in
the repository, and the method page exists with the sections the code refers to."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTES = re.compile(r"\b(ESTIMATES|PROBES|CONTRACT|STYLE)\.md\b|\.\./shared\b")


def _texts():
    for top in ("advisor", "resources", "packaging", "docs", "benchmarks"):
        for p in sorted((REPO / top).rglob("*")):
            if p.is_file() and p.suffix in {".py", ".md", ".toml", ".csv", ".sh", ".xml", ".desktop", ".spec"}:
                yield p
    yield REPO / "README.md"


def test_no_file_cites_notes_outside_the_repository():
    hits = [f"{p.relative_to(REPO)}:{i}" for p in _texts()
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if NOTES.search(line)]
    assert hits == []


def test_method_page_has_the_sections_the_code_names():
    headings = {m.group(1).strip().lower()
                for m in re.finditer(r"^#+ (.+)$", (REPO / "docs" / "method.md").read_text(), re.M)}
    cited = set()
    for p in (REPO / "advisor").rglob("*.py"):
        for m in re.finditer(r'docs/method\.md[^"\n]*?["“]([A-Z][^"”]+)["”]', p.read_text()):
            cited.add(m.group(1).strip().lower())
    assert cited, "the code cites docs/method.md sections by title"
    assert cited <= headings, sorted(cited - headings)
