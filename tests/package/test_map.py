"""docs/architecture.md is the map, and stays true: every module of each Python wing and
every file of each C++ wing is named (`name`, in backquotes) in that wing's row of its
table. A file added without a word in the map fails here, naming it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "python" / "kdist"
CORE = ROOT / "cpp" / "core"


def _rows(heading: str) -> dict[str, str]:
    """The first table after `heading`: each row's wing cell ("`_cli/`", "leaves") -> the row."""
    text = MAP.read_text()
    after = text[text.index(heading) :]
    rows: dict[str, str] = {}
    for line in after.splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= {"-", " "}:
            continue
        wing = cells[1] if cells[0].isdigit() else cells[0]  # the C++ table leads with a floor
        rows[wing.strip("`")] = line
    return rows


def _named(row: str) -> set[str]:
    """Every `name` in backquotes in a row, and each path's last part (`config/clusters/<x>`)."""
    names = set()
    for quoted in re.findall(r"`([^`]+)`", row):
        names.add(quoted)
        names.update(part for part in re.split(r"[/ ,.()]+", quoted) if part)
    return names


def _missing_python() -> dict[str, list[str]]:
    rows = _rows("### The wings and their import rules")
    missing: dict[str, list[str]] = {}
    wings = {p.parent.name: p.parent for p in PACKAGE.glob("*/__init__.py")}
    for name, folder in sorted(wings.items()):
        row = rows.get(f"{name}/")
        modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
        if row is None:
            missing[f"{name}/ (no row)"] = modules
            continue
        gone = [m for m in modules if m not in _named(row)]
        if gone:
            missing[f"{name}/"] = gone
    leaves = [
        p.stem
        for p in PACKAGE.glob("*.py")
        if p.stem not in {"__init__", "__main__", "_version"}
    ]
    gone = [m for m in sorted(leaves) if m not in _named(rows.get("leaves", ""))]
    if gone:
        missing["leaves"] = gone
    return missing


def _missing_cpp() -> dict[str, list[str]]:
    rows = _rows("### The C++ core")
    missing: dict[str, list[str]] = {}
    for folder in sorted(p for p in CORE.iterdir() if p.is_dir()):
        row = rows.get(f"{folder.name}/")
        files = sorted({p.stem for p in folder.rglob("*") if p.suffix in (".cc", ".h")})
        if row is None:
            missing[f"{folder.name}/ (no row)"] = files
            continue
        gone = [f for f in files if f not in _named(row)]
        if gone:
            missing[f"{folder.name}/"] = gone
    return missing


def test_every_python_module_is_named_in_its_wings_row() -> None:
    assert _missing_python() == {}, "name these in docs/architecture.md's wing table"


def test_every_core_file_is_named_in_its_wings_row() -> None:
    assert _missing_cpp() == {}, "name these in docs/architecture.md's C++ table"
