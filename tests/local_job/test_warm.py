"""Warm starts and the compilation cache of `kdist launch` (issue 54).

A program run in a warm spare behaves exactly as the same program started cold, attempt by
attempt (one parametrised test: `python PROGRAM` and `python -m pkg.mod`); `--no-warm` and a
command that is not Python start cold; a spare killed while it waits is replaced and the
next attempt still starts (warm); and every attempt shares one JAX compilation cache,
used on attempt 1 (JAX's own cache-hit line) and removed at the end when kdist made it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.launched import Launcher, attempt_rows
from helpers.support import PROGRAMS, clean_env, object_in
from kdist import _jax_backend
from kdist._local_job import compile_cache, warm

pytestmark = pytest.mark.launcher

_BOUND = 120.0  # bounds every launch; nothing is timed against it
# The values that differ between any two launches: the coordinator's port, the attempt's
# folders, the launcher's pid.
_MASKED = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KDIST_VERDICT_FILE",
    "KDIST_PROGRESS_FILE",  # beside it, in each launch's records folder
    "JAX_COMPILATION_CACHE_DIR",
    "KDIST_RUN_ID",  # each launch its own run
)


def _launch(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdist", "launch", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=_BOUND,
        check=False,
    )


def _seen(stdout: str) -> list[dict[str, object]]:
    """Each attempt's report of how its process was started, masked where launches differ."""
    reports = []
    for line in stdout.splitlines():
        found = object_in(line)
        if found is None:
            continue
        environ = found["environ"]
        assert isinstance(environ, dict)
        for name in _MASKED:
            environ.pop(name, None)
        found.pop("parent")
        reports.append(found)
    return reports


def _process_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[0] ") and "{" not in line]


@pytest.mark.parametrize(
    "program",
    [["warm_probe.py", "an argument", "--flag"], ["-m", "warm_pkg.probe", "x"]],
    ids=["python PROGRAM", "python -m pkg.mod"],
)
def test_a_program_in_a_warm_spare_behaves_exactly_as_started_cold(
    tmp_path: Path, program: list[str]
) -> None:
    """Five attempts of one process (warm_probe.ENDINGS: a failing warm-up, exit 3, death
    by SIGTERM, an uncaught exception, exit 0), started cold (--no-warm) and warm: each
    warm attempt sees the same argv, __main__, __file__, sys.path[0], sibling import,
    stdin, environment, signal dispositions, process group, death signal, priority and
    open files, writes the same lines (its traceback too) and ends the same way."""
    env = clean_env(1)
    runs = {}
    for how in ("cold", "warm"):
        args = ["-n", "1", "--max-restarts", "4", *(["--no-warm"] if how == "cold" else [])]
        runs[how] = _launch([*args, "--", sys.executable, *program], env, PROGRAMS)
    cold, warm_run = runs["cold"], runs["warm"]
    assert cold.returncode == warm_run.returncode == 0, warm_run.stderr[-3000:]
    started = {how: re.findall(r"started 1 process .*", r.stderr) for how, r in runs.items()}
    assert len(started["cold"]) == len(started["warm"]) == 5
    assert not any("warm" in line for line in started["cold"]), cold.stderr  # --no-warm
    assert "warm" not in started["warm"][0], warm_run.stderr  # no spare before attempt 0
    assert all("; warm: 0 (spares of about" in s for s in started["warm"][1:]), warm_run.stderr
    seen = {how: _seen(r.stdout) for how, r in runs.items()}
    assert len(seen["cold"]) == len(seen["warm"]) == 5
    assert seen["warm"] == seen["cold"]
    assert seen["warm"][1]["path0"] == str(PROGRAMS)  # the script's folder, or the cwd for -m
    assert seen["warm"][1]["jax_backends"] == "none"
    assert _process_lines(warm_run.stdout) == _process_lines(cold.stdout)
    assert _process_lines(warm_run.stderr) == _process_lines(cold.stderr)
    assert "[0] ValueError: an uncaught error" in _process_lines(warm_run.stderr)
    assert "kdist spare" not in warm_run.stdout + warm_run.stderr  # the spare's own lines
    statuses = [row[2] for row in _rows(warm_run.stderr)]
    assert statuses == [row[2] for row in _rows(cold.stderr)] == ["1", "3", "143", "1", "0"]


def _rows(stderr: str) -> list[list[str]]:
    table = stderr.split("attempts:\n", 1)[1].splitlines()[1:]
    return [line.split() for line in table if line.strip()[:1].isdigit()]


def test_a_command_that_is_not_python_starts_cold() -> None:
    """Not a Python program this interpreter runs: no spare is made, every attempt cold."""
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    assert warm.python_program(["bash", "-c", "exit 1"], env) is None
    assert warm.python_program(["env", "X=1", sys.executable, "p.py"], env) is None
    assert warm.python_program([sys.executable, "-u", "p.py"], env) is None
    assert warm.python_program([sys.executable, "-c", "pass"], env) is None
    assert warm.python_program([sys.executable], env) is None
    assert warm.python_program(["/usr/bin/python3", "-m", "json.tool"], env) is None
    assert warm.python_program([sys.executable, "-m", "json.tool", "x"], env) == (
        warm.PythonProgram("module", "json.tool", ("x",))
    )
    pool = warm.SparePool()
    try:
        assert pool.take(0, ["bash", "-c", "exit 1"], env) is None
        pool.maintain()
        assert pool.describe() == ""  # nothing started
    finally:
        pool.close()


def test_a_non_python_job_restarts_cold(tmp_path: Path) -> None:
    result = _launch(
        [
            "-n",
            "1",
            "--max-restarts",
            "1",
            "--",
            "bash",
            "-c",
            'exit "$((1 - KDIST_RESTART_COUNT))"',
        ],
        clean_env(1),
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("started 1 process") == 2
    assert "warm" not in result.stderr


def test_a_spare_killed_while_waiting_is_replaced_and_the_next_attempt_starts_warm(
    tmp_path: Path,
) -> None:
    """Attempt 0 waits for a file; meanwhile its spare is ready, `kdist doctor` says the
    next attempt starts warm, and the test kills the spare: the launcher names it and makes
    another, and attempt 1 starts in that one and passes."""
    go = tmp_path / "go"
    env = clean_env(1, WARM_PROBE_WAIT_FOR=str(go), WARM_PROBE_ENDINGS="warm-up,exit 0")
    command = [
        "-n",
        "1",
        "--max-restarts",
        "1",
        "--",
        sys.executable,
        str(PROGRAMS / "warm_probe.py"),
    ]
    launcher = Launcher(command, env)
    try:
        state_file = warm.state_folder() / f"{launcher.proc.pid}.json"

        def spare_ready() -> list[dict[str, object]]:
            try:
                state = json.loads(state_file.read_text())
            except (OSError, ValueError):
                return []
            return [s for s in state["spares"] if s["ready"]]

        launcher.wait_for(lambda: bool(spare_ready()), timeout=_BOUND)
        doctor = subprocess.run(
            [sys.executable, "-m", "kdist", "doctor", "--json", "--no-probe"],
            env=clean_env(1),
            capture_output=True,
            text=True,
            timeout=_BOUND,
            check=False,
        )
        mine = [
            found
            for found in json.loads(doctor.stdout)["warm"]["launchers"]
            if found["launcher_pid"] == launcher.proc.pid
        ]
        assert len(mine) == 1 and mine[0]["next_attempt_warm"], doctor.stdout
        assert mine[0]["memory_mib"] > 10, mine
        first = spare_ready()[0]["pid"]
        assert isinstance(first, int)
        os.kill(first, signal.SIGKILL)
        launcher.wait_for(
            lambda: any(f"(pid {first}) died while waiting" in line for line in launcher.stderr),
            timeout=_BOUND,
        )
        launcher.wait_for(lambda: any(s["pid"] != first for s in spare_ready()), timeout=_BOUND)
        go.touch()
        assert launcher.wait(timeout=_BOUND) == 0, launcher.describe()
    finally:
        launcher.end()
    assert [row[:1] + row[2:3] for row in attempt_rows(launcher)] == [["0", "1"], ["1", "0"]]
    started = [line for line in launcher.stderr if "started 1 process" in line]
    assert "warm: 0" not in started[0] and "warm: 0" in started[1], launcher.describe()
    assert not state_file.exists()  # the launcher's state goes with it


def test_every_attempt_shares_one_compilation_cache_removed_at_the_end(tmp_path: Path) -> None:
    """Attempt 0 compiles a function and fails; attempt 1 (warm) compiles nothing: JAX's
    own log names the persistent cache's hits. kdist made the folder: it is gone after."""
    env = clean_env(
        1, JAX_LOG_COMPILES="1", WARM_PROBE_COMPILE="1", WARM_PROBE_ENDINGS="warm-up,exit 0"
    )
    result = _launch(
        ["-n", "1", "--max-restarts", "1", "--", sys.executable, str(PROGRAMS / "warm_probe.py")],
        env,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    attempts = result.stderr.split("starting the job again")
    assert len(attempts) == 2, result.stderr[-3000:]
    assert "Persistent compilation cache hit" not in attempts[0]
    assert "Persistent compilation cache hit for 'jit_probe'" in attempts[1], attempts[1][-3000:]
    folders = {str(r["environ"]["JAX_COMPILATION_CACHE_DIR"]) for r in _reports(result.stdout)}
    assert len(folders) == 1, folders  # one folder for every attempt
    assert not Path(folders.pop()).exists()


def _reports(stdout: str) -> list[dict[str, dict[str, object]]]:
    return [found for line in stdout.splitlines() if (found := object_in(line))]  # type: ignore[misc]


def test_the_cache_is_the_users_when_they_set_jax_variables_and_a_bad_folder_is_named(
    tmp_path: Path,
) -> None:
    tested = _jax_backend.NEWEST_TESTED_JAX
    assert (
        compile_cache.plan({"JAX_ENABLE_COMPILATION_CACHE": "false"}, None, tested).variables == {}
    )
    in_logs = compile_cache.plan({}, tmp_path / "logs", tested)
    assert in_logs.variables["JAX_COMPILATION_CACHE_DIR"] == str(
        tmp_path / "logs" / "jax-compilation-cache"
    )
    in_logs.close()
    assert (tmp_path / "logs" / "jax-compilation-cache").is_dir()  # --log-dir's: kept
    blocked = tmp_path / "a file"
    blocked.write_text("")
    bad = compile_cache.plan({}, blocked, tested)
    assert bad.folder is None and bad.variables == {}
    assert bad.warning.startswith(
        f"the compilation cache {blocked / 'jax-compilation-cache'} cannot"
    )


def test_the_cache_stays_off_for_a_jax_newer_than_the_newest_tested(tmp_path: Path) -> None:
    # JAX 0.12.1's persistent cache hangs a multi-process job at its first cached step
    # (measured: two raw jax.distributed processes on CPU, a jit with a cross-process sum,
    # run twice on one cache folder). kdist turns the cache on only for a JAX the suite ran.
    newer = compile_cache.plan({}, tmp_path / "logs", "0.12.1")
    assert newer.folder is None and newer.variables == {}
    assert not (tmp_path / "logs").exists()
    assert "JAX 0.12.1 is newer than the newest tested" in newer.warning
    assert "set JAX_COMPILATION_CACHE_DIR" in newer.warning
    assert compile_cache.plan({}, tmp_path / "logs", _jax_backend.OLDEST_SUPPORTED_JAX).variables
