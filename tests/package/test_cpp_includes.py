"""cpp/core's wings include each other downward only (tests/package/cpp_include_graph.py), on the
real tree and on small made-up trees that break one rule each. Needs no built kdist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cpp_include_graph
import pytest
from cpp_include_graph import wing_of as wing_of_path

CORE = cpp_include_graph.checkout_core()
SCRIPT = Path(cpp_include_graph.__file__)
# A made-up core: base at the bottom, net above it, the two protocols on the top floor.
ORDER = "base\nnet\nliveness roll_call\nnever liveness -> roll_call\n"


def make_core(root: Path, files: dict[str, str], order: str = ORDER) -> Path:
    """A core folder under `root` with `files` (paths from the core's root) and wings.txt."""
    core = root / "core"
    for name, text in files.items():
        (core / name).parent.mkdir(parents=True, exist_ok=True)
        (core / name).write_text(text)
    (core / cpp_include_graph.ORDER_FILE).write_text(order)
    return core


def problems_of(core: Path) -> list[str]:
    graph = cpp_include_graph.read(core)
    return graph.problems(cpp_include_graph.read_order(core), "core")


def run_script(core: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(core)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


CLEAN = {
    "base/status.h": "#pragma once\n",
    "base/status.cc": '#include "base/status.h"\n',
    "net/socket.h": '#include "base/status.h"\n',
    "liveness/hub.cc": '#include "net/socket.h"\n#include "base/status.h"\n',
    "roll_call/worker.cc": '#include "net/socket.h"\n',
}


def test_the_real_core_keeps_its_wings() -> None:
    graph = cpp_include_graph.read(CORE)
    order = cpp_include_graph.read_order(CORE)
    assert graph.problems(order) == []
    assert set(graph.wings) == {
        "base",
        "net",
        "config",
        "stop",
        "liveness",
        "roll_call",
        "rendezvous",
        "job",
    }
    assert "config/clusters/slurm.cc" in graph.files
    arrows = graph.arrows()
    assert arrows[("liveness", "roll_call")] == 0
    assert arrows[("stop", "roll_call")] == 0
    # The nodes' rendezvous borrows nothing from the channel and only the environment
    # comparison from the roll call: what they share lives in base/ and net/.
    assert arrows[("rendezvous", "liveness")] == 0
    borrowed = {i.target for i in graph.includes if wing_of_path(i.source) == "rendezvous"}
    assert {t for t in borrowed if t and t.startswith("roll_call/")} == {"roll_call/consistency.h"}
    # Every wing but base includes something below it, so the floors are real.
    assert {source for source, _ in arrows} == set(graph.wings) - {"base"}


def test_every_core_file_is_built_and_tested_by_its_path() -> None:
    """CMake's KDIST_CORE_NAMES names every .cc of the core by its path (wing and all), and
    each has cpp/tests/<name>_test.cc (cpp/tests mirrors the wings)."""
    cmake = (CORE.parents[1] / "CMakeLists.txt").read_text()
    listed = cmake.split("set(KDIST_CORE_NAMES", 1)[1].split(")", 1)[0].split()
    sources = sorted(p.relative_to(CORE).with_suffix("").as_posix() for p in CORE.rglob("*.cc"))
    assert sorted(listed) == sources
    tests = CORE.parents[1] / "cpp" / "tests"
    untested = [n for n in sources if not (tests / f"{n}_test.cc").is_file()]
    assert untested == ["config/cluster_spec"]  # tested through config/resolve (CMakeLists.txt)


def test_the_script_prints_the_real_graph_and_exits_zero() -> None:
    result = run_script(CORE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "circles: 0" in result.stdout
    assert "problems: 0" in result.stdout
    assert "  floor 0: base/" in result.stdout
    assert "  liveness -> stop: " in result.stdout


def test_a_clean_made_up_core_passes(tmp_path: Path) -> None:
    core = make_core(tmp_path, CLEAN)
    assert problems_of(core) == []
    result = run_script(core)
    assert result.returncode == 0, result.stdout
    assert "  liveness -> net: 1" in result.stdout
    assert "  liveness -> base: 1" in result.stdout


def test_a_circle_between_wings_fails_naming_it(tmp_path: Path) -> None:
    core = make_core(tmp_path, {**CLEAN, "base/status.cc": '#include "net/socket.h"\n'})
    problems = problems_of(core)
    circles = [p for p in problems if p.startswith("circle: ")]
    assert circles == [
        "circle: base <-> net include each other (base/status.cc:1 includes net/socket.h;"
        " net/socket.h:1 includes base/status.h): expected includes one way only; move the"
        " helper one side uses into the wing it serves"
    ]
    result = run_script(core)
    assert result.returncode == 1
    assert "circles: 1" in result.stdout


def test_an_include_up_the_order_fails_naming_the_file_and_line(tmp_path: Path) -> None:
    # liveness/ includes nothing of net/ here, so the arrow up makes no circle.
    files = {
        "base/status.h": "#pragma once\n",
        "net/socket.h": '#include "base/status.h"\n',
        "net/dns.cc": '#include "net/socket.h"\n\n#include "liveness/notice.h"\n',
        "liveness/notice.h": '#include "base/status.h"\n',
    }
    core = make_core(tmp_path, files)
    assert problems_of(core) == [
        'core/net/dns.cc:3: includes "liveness/notice.h", an arrow back up: net/ (floor 1) may'
        " include base/, found liveness/ (floor 2); move what it uses down to the wing it"
        " serves, or change the floors in core/wings.txt"
    ]
    result = run_script(core)
    assert result.returncode == 1
    assert "net/dns.cc:3" in result.stdout


def test_an_include_on_the_same_floor_is_an_arrow_back_up(tmp_path: Path) -> None:
    order = "base\nnet\nliveness roll_call\n"  # no never line: the floors alone forbid it
    core = make_core(tmp_path, {**CLEAN, "roll_call/book.h": '#include "liveness/hub.cc"\n'}, order)
    [problem] = problems_of(core)
    assert problem.startswith('core/roll_call/book.h:1: includes "liveness/hub.cc", an arrow')
    assert "found liveness/ (floor 2)" in problem


def test_liveness_never_includes_the_roll_call_whatever_the_floors(tmp_path: Path) -> None:
    order = "base\nnet\nroll_call\nliveness\nnever liveness -> roll_call\n"
    core = make_core(
        tmp_path, {**CLEAN, "liveness/book.cc": '#include "roll_call/worker.cc"\n'}, order
    )
    assert problems_of(core) == [
        'core/liveness/book.cc:1: includes "roll_call/worker.cc": liveness/ never includes'
        " roll_call/ (core/wings.txt); move what it uses to a wing both may include"
    ]


def test_an_include_without_its_folder_fails_with_the_path_to_write(tmp_path: Path) -> None:
    core = make_core(
        tmp_path, {**CLEAN, "net/socket.cc": '#include <cerrno>\n#include "status.h"\n'}
    )
    assert problems_of(core) == [
        'core/net/socket.cc:2: includes "status.h" without its folder: expected'
        ' "base/status.h" (includes are written from core, folder and all)'
    ]
    assert run_script(core).returncode == 1


def test_an_include_of_no_core_file_and_a_file_in_no_wing_fail(tmp_path: Path) -> None:
    core = make_core(
        tmp_path, {**CLEAN, "net/socket.cc": '#include "net/nothing.h"\n', "loose.h": ""}
    )
    problems = problems_of(core)
    assert problems[0].startswith("core/loose.h: in no wing: expected every file in a wing's")
    assert problems[1].startswith('core/net/socket.cc:1: includes "net/nothing.h", which is no')
    assert len(problems) == 2


def test_a_wing_the_order_does_not_declare_fails(tmp_path: Path) -> None:
    core = make_core(tmp_path, {**CLEAN, "extra/thing.h": '#include "base/status.h"\n'})
    [problem] = problems_of(core)
    assert problem.startswith("core/extra/thing.h: in the wing extra/, which core/wings.txt")


def test_a_malformed_never_line_is_named(tmp_path: Path) -> None:
    core = make_core(tmp_path, CLEAN, "base\nnever liveness roll_call\n")
    with pytest.raises(ValueError, match=r"wings.txt:2: expected `never WING -> WING`"):
        cpp_include_graph.read_order(core)
