"""The import graph of kdist's Python modules, read from their source (nothing is imported).

Used by tests/package/test_import.py, and runnable to print the house's figures:

    python tests/package/import_graph.py [PACKAGE_DIR]    # default: the installed kdist

Modules are named by their path under the package ("_start.config", "_errors",
"__init__"). An import is an arrow from the importing module to the imported one; three
kinds are read: load-time imports (at the top of a module, run when it is imported),
lazy ones (inside a function, and the modules `__init__`'s `_LAZY_NAMES` loads on first
use) and type-only ones (under `if TYPE_CHECKING:`). Arrows are counted once per
(importer, imported) pair.

- A module's floor is 0 when it imports no other kdist module at run time (load-time or
  lazy), else one more than the highest floor among those it imports; the modules of a
  circle share a floor.
- An arrow back up is an import, of any kind, of a module on the same floor or higher.
- A circle is a set of modules that reach each other through any kind of import.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

LOAD, LAZY, TYPING = "load", "lazy", "typing"


@dataclass(frozen=True)
class Arrow:
    """One import: `source` imports `target`, of `kind` LOAD, LAZY or TYPING."""

    source: str
    target: str
    kind: str


@dataclass
class ImportGraph:
    """Every kdist module of a package folder, and every import among them."""

    modules: list[str]
    arrows: list[Arrow] = field(default_factory=list)

    def targets(self, module: str, kinds: tuple[str, ...] = (LOAD, LAZY, TYPING)) -> set[str]:
        return {a.target for a in self.arrows if a.source == module and a.kind in kinds}

    def floors(self) -> dict[str, int]:
        """Each module's floor over run-time imports (see the module docstring)."""
        run_time = (LOAD, LAZY)
        group = {m: m for m in self.modules}
        for members in self.circles(run_time):
            for member in members:
                group[member] = members[0]
        floors: dict[str, int] = {}

        def floor(leader: str) -> int:
            if leader not in floors:
                members = [m for m in self.modules if group[m] == leader]
                below = {group[t] for m in members for t in self.targets(m, run_time)}
                below.discard(leader)
                floors[leader] = 1 + max(floor(b) for b in below) if below else 0
            return floors[leader]

        return {m: floor(group[m]) for m in self.modules}

    def arrows_back_up(self) -> list[tuple[str, str]]:
        """(importer, imported) pairs whose import reaches the same floor or higher."""
        floors = self.floors()
        pairs = {(a.source, a.target) for a in self.arrows}
        return sorted((s, t) for s, t in pairs if floors[t] >= floors[s])

    def circles(self, kinds: tuple[str, ...] = (LOAD, LAZY, TYPING)) -> list[list[str]]:
        """The strongly connected sets of two or more modules, over imports of `kinds`."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []
        counter = [0]

        def connect(module: str) -> None:  # Tarjan's algorithm; the graph is small
            index[module] = low[module] = counter[0]
            counter[0] += 1
            stack.append(module)
            on_stack.add(module)
            for target in sorted(self.targets(module, kinds)):
                if target not in index:
                    connect(target)
                    low[module] = min(low[module], low[target])
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
            if low[module] == index[module]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == module:
                        break
                if len(members) > 1:
                    found.append(sorted(members))

        for module in self.modules:
            if module not in index:
                connect(module)
        return found


def module_name(package: Path, path: Path) -> str:
    """ "_start.config" for <package>/_start/config.py; "_start" for its __init__.py."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The kdist module a dotted name under kdist refers to (a package's __init__ when
    the name is a folder), or None when it is not one of kdist's Python modules."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported(node: ast.AST, current: str, modules: set[str]) -> list[str]:
    """The kdist modules one import statement brings in."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name.removeprefix("kdist.") for a in node.names if a.name.startswith("kdist.")]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base_parts = current.split(".")[: -node.level or None]
            base = ".".join([*base_parts, node.module] if node.module else base_parts)
        elif node.module == "kdist":
            base = ""
        elif node.module and node.module.startswith("kdist."):
            base = node.module.removeprefix("kdist.")
        else:
            return []
        for alias in node.names:
            full = f"{base}.{alias.name}" if base else alias.name
            names.append(full if _resolve(full, modules) == full else base)
    found = [_resolve(name, modules) for name in names if name]
    return [name for name in found if name is not None]


def read(package: Path) -> ImportGraph:
    """The import graph of the package folder `package` (kdist's own folder)."""
    paths = sorted(package.rglob("*.py"))
    names = {module_name(package, p): p for p in paths}
    graph = ImportGraph(sorted(names))
    modules = set(names)
    for current, path in names.items():
        tree = ast.parse(path.read_text())
        pending: list[tuple[ast.AST, str]] = [(node, LOAD) for node in tree.body]
        while pending:
            node, kind = pending.pop()
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                pending.extend((child, TYPING) for child in node.body)
                pending.extend((child, kind) for child in node.orelse)
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(node, current, modules):
                    if target != current:
                        graph.arrows.append(Arrow(current, target, kind))
                continue
            inner = LAZY if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else kind
            pending.extend((child, inner) for child in ast.iter_child_nodes(node))
        if current == "__init__":
            graph.arrows.extend(Arrow(current, target, LAZY) for target in _lazy_names(tree))
    return graph


def _lazy_names(tree: ast.Module) -> list[str]:
    """The modules named in `__init__`'s `_LAZY_NAMES` ("kdist._start.initialize" ...)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "_LAZY_NAMES" for t in targets):
            values = ast.literal_eval(node.value)  # type: ignore[attr-defined]
            return sorted({str(v).removeprefix("kdist.") for v in values.values()})
    return []


def report(graph: ImportGraph) -> str:
    floors = graph.floors()
    back = graph.arrows_back_up()
    circles = graph.circles()
    lines = [
        f"files: {len(graph.modules)} Python modules",
        f"floors: {max(floors.values()) + 1}",
        f"arrows back up: {len(back)}",
        f"circles: {len(circles)}",
    ]
    lines += [f"  back up: {source} -> {target}" for source, target in back]
    lines += [f"  circle: {' <-> '.join(c)}" for c in circles]
    for floor in range(max(floors.values()) + 1):
        on_it = [m for m in graph.modules if floors[m] == floor]
        lines.append(f"  floor {floor}: {', '.join(on_it)}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        folder = Path(sys.argv[1])
    else:
        import kdist

        folder = Path(kdist.__file__).parent
    print(report(read(folder)))
