"""Figure 1: whole-process `import` wall time and peak RSS, `python -c pass` as the floor."""

from __future__ import annotations

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series, interleave, python_measured

STATEMENTS = {
    "python -c pass": "pass",
    "import kdist": "import kdist",
    "import jax": "import jax",
    "import keras": "import keras",
}


def measure(runs: int) -> list[Figure]:
    env = child_env()

    def contender(statement: str):  # type: ignore[no-untyped-def]
        def run() -> dict[str, float]:
            wall, rss, code, err = python_measured(statement, env, 120)
            if code != 0:
                raise RuntimeError(f"python -c {statement!r} failed ({code}):\n{err[-2000:]}")
            return {"wall_ms": wall * 1000, "rss_mib": rss}

        return run

    samples = interleave({name: contender(s) for name, s in STATEMENTS.items()}, runs=runs)
    wall = Figure(
        "import_wall",
        "Whole-process import wall time",
        [Series(name, "ms", samples[name]["wall_ms"]) for name in STATEMENTS],
        baseline="python -c pass",
        notes=["Target: `import kdist` ≤ 1.3× `python -c pass`."],
    )
    rss = Figure(
        "import_rss",
        "Whole-process peak RSS after import",
        [Series(name, "MiB", samples[name]["rss_mib"]) for name in STATEMENTS],
        baseline="python -c pass",
        notes=["Target: `import kdist` peak RSS ≤ 2× `python -c pass`."],
    )
    return [wall, rss]
