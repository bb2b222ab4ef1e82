"""The include graph of kdist's C++ core by wing, read from its `#include "…"` lines.

Used by tests/package/test_cpp_includes.py, and runnable to print the house's figures (exit status
1, after the figures, when a rule is broken):

    python tests/package/cpp_include_graph.py [CORE_DIR]    # default: this checkout's cpp/core

A wing is a folder of the core (`base/`, `net/`, …; `config/clusters/` belongs to
`config/`). Includes are written from the core's root, folder and all
(`#include "net/socket.h"`), as the build's include path is the core's root. The declared
order is the core's `wings.txt`: one floor a line, the bottom floor first, and `never A ->
B` lines. An include is an arrow from the including file's wing to the included file's;
arrows inside a wing are not counted. The rules:

- A file may include its own wing and the wings of the floors below its wing's: an arrow
  to a wing on the same floor or higher is an arrow back up.
- A `never A -> B` line forbids A's files to include B's whatever the floors say.
- A circle is a set of wings that reach each other through includes.
- An include names a file of the core by its path from the root: one written without its
  folder ("socket.h" for net/socket.h) or naming no file of the core is an error, and so is
  a file outside every declared wing.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ORDER_FILE = "wings.txt"
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
_NEVER = re.compile(r"^never\s+(\S+)\s*->\s*(\S+)$")


@dataclass(frozen=True)
class Include:
    """One `#include "written"` on line `line` of `source` (paths from the core's root);
    `target` is the core file it names, None when it names none."""

    source: str
    line: int
    written: str
    target: str | None


@dataclass
class WingOrder:
    """The declared order: floors of wings, bottom first, and the arrows never allowed."""

    floors: list[list[str]]
    never: list[tuple[str, str]] = field(default_factory=list)

    def floor_of(self, wing: str) -> int | None:
        for number, wings in enumerate(self.floors):
            if wing in wings:
                return number
        return None


@dataclass
class IncludeGraph:
    """Every file of the core (paths from its root) and every `#include "…"` among them."""

    files: list[str]
    includes: list[Include]

    @property
    def wings(self) -> list[str]:
        return sorted({wing_of(f) for f in self.files if wing_of(f)})

    def arrows(self) -> Counter[tuple[str, str]]:
        """(including wing, included wing) -> how many includes, between wings only."""
        counts: Counter[tuple[str, str]] = Counter()
        for inc in self.includes:
            if inc.target is None:
                continue
            source, target = wing_of(inc.source), wing_of(inc.target)
            if source and target and source != target:
                counts[(source, target)] += 1
        return counts

    def circles(self) -> list[list[str]]:
        """The strongly connected sets of two or more wings, each sorted."""
        targets: dict[str, set[str]] = {w: set() for w in self.wings}
        for source, target in self.arrows():
            targets.setdefault(source, set()).add(target)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def connect(wing: str) -> None:  # Tarjan's algorithm; the graph is small
            index[wing] = low[wing] = len(index)
            stack.append(wing)
            on_stack.add(wing)
            for target in sorted(targets.get(wing, ())):
                if target not in index:
                    connect(target)
                    low[wing] = min(low[wing], low[target])
                elif target in on_stack:
                    low[wing] = min(low[wing], index[target])
            if low[wing] == index[wing]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == wing:
                        break
                if len(members) > 1:
                    found.append(sorted(members))

        for wing in sorted(targets):
            if wing not in index:
                connect(wing)
        return found

    def problems(self, order: WingOrder, core_name: str = "cpp/core") -> list[str]:
        """One line per broken rule: what was found, where (file:line), what was expected
        and what to do."""
        lines: list[str] = []
        declared = [w for floor in order.floors for w in floor]
        listed = ", ".join(f"{w}/" for w in declared)
        for path in self.files:
            wing = wing_of(path)
            if not wing:
                lines.append(
                    f"{core_name}/{path}: in no wing: expected every file in a wing's folder"
                    f" ({listed}); move it into the wing it serves"
                )
            elif order.floor_of(wing) is None:
                lines.append(
                    f"{core_name}/{path}: in the wing {wing}/, which {core_name}/{ORDER_FILE}"
                    f" does not declare (it declares {listed}); declare it on a floor there"
                    " or move the file into a declared wing"
                )
        by_name: dict[str, list[str]] = {}
        for path in self.files:
            by_name.setdefault(Path(path).name, []).append(path)
        never = set(order.never)
        for inc in self.includes:
            where = f"{core_name}/{inc.source}:{inc.line}"
            if inc.target is None:
                same_name = by_name.get(Path(inc.written).name, [])
                if same_name:
                    lines.append(
                        f'{where}: includes "{inc.written}" without its folder: expected'
                        f' "{same_name[0]}" (includes are written from {core_name}, folder'
                        " and all)"
                    )
                else:
                    lines.append(
                        f'{where}: includes "{inc.written}", which is no file of {core_name}:'
                        f' expected a path from {core_name}, such as "base/status.h"'
                    )
                continue
            source, target = wing_of(inc.source), wing_of(inc.target)
            if not source or not target or source == target:
                continue
            if (source, target) in never:
                lines.append(
                    f'{where}: includes "{inc.written}": {source}/ never includes {target}/'
                    f" ({core_name}/{ORDER_FILE}); move what it uses to a wing both may include"
                )
                continue
            source_floor, target_floor = order.floor_of(source), order.floor_of(target)
            if source_floor is None or target_floor is None or target_floor < source_floor:
                continue
            below = [w for floor in order.floors[:source_floor] for w in floor]
            may = ", ".join(f"{w}/" for w in below) if below else "no other wing"
            lines.append(
                f'{where}: includes "{inc.written}", an arrow back up: {source}/ (floor'
                f" {source_floor}) may include {may}, found {target}/ (floor {target_floor});"
                " move what it uses down to the wing it serves, or change the floors in"
                f" {core_name}/{ORDER_FILE}"
            )
        for members in self.circles():
            lines.append(
                f"circle: {' <-> '.join(members)} include each other"
                f" ({self._circle_evidence(members)}): expected includes one way only; move"
                " the helper one side uses into the wing it serves"
            )
        return lines

    def _circle_evidence(self, members: list[str]) -> str:
        """The first include of each arrow inside a circle: "net/dns.h:5 -> config/x.h"."""
        first: dict[tuple[str, str], Include] = {}
        for inc in self.includes:
            if inc.target is None:
                continue
            key = (wing_of(inc.source), wing_of(inc.target))
            if key[0] != key[1] and key[0] in members and key[1] in members:
                first.setdefault(key, inc)
        return "; ".join(
            f"{inc.source}:{inc.line} includes {inc.target}" for _, inc in sorted(first.items())
        )


def wing_of(path: str) -> str:
    """ "net" for "net/socket.h", "config" for "config/clusters/slurm.h", "" at the root."""
    parts = Path(path).parts
    return parts[0] if len(parts) > 1 else ""


def read(core: Path) -> IncludeGraph:
    """The include graph of the core folder `core` (its .h and .cc files)."""
    paths = sorted(p for p in core.rglob("*") if p.suffix in (".h", ".cc") and p.is_file())
    files = [p.relative_to(core).as_posix() for p in paths]
    known = set(files)
    includes: list[Include] = []
    for path, name in zip(paths, files, strict=True):
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            match = _INCLUDE.match(text)
            if match:
                written = match.group(1)
                includes.append(
                    Include(name, number, written, written if written in known else None)
                )
    return IncludeGraph(files, includes)


def read_order(core: Path) -> WingOrder:
    """The core's wings.txt (see the module docstring); ValueError naming a bad line."""
    path = core / ORDER_FILE
    order = WingOrder([])
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        never = _NEVER.match(text)
        if never:
            order.never.append((never.group(1), never.group(2)))
        elif "->" in text or text.startswith("never"):
            raise ValueError(f"{path}:{number}: expected `never WING -> WING`, found {raw!r}")
        else:
            order.floors.append(text.split())
    return order


def report(graph: IncludeGraph, order: WingOrder, core_name: str = "cpp/core") -> str:
    arrows = graph.arrows()
    problems = graph.problems(order, core_name)
    counts = Counter(wing_of(f) for f in graph.files)
    lines = [
        f"files: {len(graph.files)} C++ files in {len(graph.wings)} wings",
        f"floors: {len(order.floors)} (declared in {core_name}/{ORDER_FILE})",
        f"arrows between wings: {len(arrows)} ({sum(arrows.values())} includes)",
        f"circles: {len(graph.circles())}",
        f"problems: {len(problems)}",
    ]
    lines += [f"  problem: {line}" for line in problems]
    for number, wings in enumerate(order.floors):
        on_it = ", ".join(f"{w}/ ({counts[w]} files)" for w in wings)
        lines.append(f"  floor {number}: {on_it}")
    for (source, target), count in sorted(arrows.items()):
        lines.append(f"  {source} -> {target}: {count}")
    lines += [f"  never: {source} -> {target}" for source, target in order.never]
    return "\n".join(lines)


def checkout_core() -> Path:
    """The cpp/core of the checkout this file is in (found upward, wherever tests/ puts it)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "cpp" / "core" / ORDER_FILE).is_file():
            return folder / "cpp" / "core"
    raise FileNotFoundError(f"no cpp/core/{ORDER_FILE} above {Path(__file__).resolve()}")


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else checkout_core()
    the_graph, the_order = read(folder), read_order(folder)
    name = Path(os.path.relpath(folder)).as_posix()  # as messages name files: from here
    print(report(the_graph, the_order, name))
    sys.exit(1 if the_graph.problems(the_order) else 0)
