"""The benchmark harness's own rules: interleaving, warm-up discarded, >= 7 counted runs,
and the table it writes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, for benchmarks/

from benchmarks import harness


def test_interleaves_rounds_and_discards_the_warm_up() -> None:
    calls: list[str] = []

    def contender(name: str):  # type: ignore[no-untyped-def]
        def run() -> dict[str, float]:
            calls.append(name)
            return {"value": float(len(calls))}

        return run

    samples = harness.interleave({"a": contender("a"), "b": contender("b")}, runs=7, warmup=2)
    assert calls == ["a", "b"] * 9
    assert samples["a"]["value"] == [5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0]
    assert samples["b"]["value"] == [6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0]


def test_fewer_than_seven_counted_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="expected at least 7 counted runs"):
        harness.interleave({"a": lambda: {"x": 1.0}}, runs=6)


def test_table_gives_min_median_max_and_the_ratio_to_the_baseline() -> None:
    figure = harness.Figure(
        "t",
        "A title",
        [
            harness.Series("jax", "s", [2.0, 4.0, 3.0]),
            harness.Series("kdist", "s", [1.0, 2.0, 9.0]),
        ],
        baseline="jax",
        notes=["a note"],
    )
    table = harness.markdown_table(figure)
    assert "| jax | 2 | 3 | 4 | 1.00× |" in table
    assert "| kdist | 1 | 2 | 9 | 0.67× |" in table
    assert table.endswith("- a note")


def test_python_measured_reports_the_childs_own_peak_rss() -> None:
    grow = "b = bytearray(300 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    ballast = bytearray(400 * 1024 * 1024)  # this process's RSS must not leak into the child's
    ballast[::4096] = b"x" * len(ballast[::4096])
    _, small, code_small, err = harness.python_measured("pass", {}, 60)
    _, large, code_large, _ = harness.python_measured(grow, {}, 60)
    del ballast
    assert code_small == code_large == 0
    assert err == ""
    assert 2 < small < 100  # MiB: a bare interpreter, not this 400 MiB process
    assert large - small > 250


def test_results_round_trip_through_json(tmp_path: Path) -> None:
    figure = harness.Figure(
        "k", "T", [harness.Series("kdist", "ms", [1.0, 2.0])], baseline="kdist", notes=["n"]
    )
    harness.write_results([figure], "# header", tmp_path)
    (loaded,) = harness.load_results(tmp_path)
    assert loaded.to_json() == figure.to_json()
    assert (tmp_path / "k.png").stat().st_size > 0
    assert "| kdist | 1 | 1.5 | 2 | 1.00× |" in (tmp_path / "results.md").read_text()
