"""Figures of kdist.BackupAndRestore, side by side in one run (a few minutes):

    python -m benchmarks.backup [--runs 3]

The training program is tests/programs/keras_backup.py (the one the tests train: Dense 8-16-1
with Dropout and Adam, 16 batches of 4 rows per epoch and process), on JAX's CPU backend.

1. Batches trained twice after a resume, kdist's callback against Keras's own
   (`keras.callbacks.BackupAndRestore`), for save_freq "epoch" and 4, after a crash at batch
   22 (epoch 2 of 3, batch 6) and after a SIGTERM there; one process, 2 devices. Counted from
   the optimizer's iteration counter: the batches the interrupted run trained plus those the
   resumed run trained, less the 48 of an uninterrupted run.
2. The cost of a backup: each epoch's seconds (the first, which compiles, left out) with the
   callback at save_freq 2 and 4 against none; one process, 2 devices, DataParallel (Keras's
   own callback fails in a job of two processes: docs/resume.md).
3. A save of a big model (BACKUP_UNITS 2,300,000: about 276 MB of weights and Adam slots), 1
   process x 2 devices and 2 processes x 2 devices (`kdist launch`), DataParallel, a save every
   2 batches: how long each save blocks the fit step that makes it (the callback's
   `_save_backup`, timed around it), how long from its start until it is committed (the
   same for a synchronous store; later for a save written in the background), and the
   time from the end of a batch that saved to the next batch's end against the same after a
   batch that saved nothing (what the background write costs the training running beside
   it). The slowest process of each save.
   The restore of one such backup, written by 2 processes x 2 devices at an agreed stop,
   on 2 x 2, 1 x 4, 4 x 1 and 1 x 1 (the callback's restore, timed around it; the slowest
   process), side by side with a plain Orbax restore of the same checkpoint onto the same
   shardings in the same processes (`StandardCheckpointer().restore`, once before the
   callback's restore and once after it); `--only profile` runs the 2 x 2 restore under
   cProfile and prints where kdist's restore spends its time; and the import of Orbax
   (`import jax, orbax.checkpoint` against `import jax` and `python -c pass`, fresh
   interpreters, interleaved).
4. Stop -> first new step under `kdist launch -n 2 --devices-per-process 2 --max-restarts 1`
   (DataParallel, save_freq "epoch"): from the SIGTERM to one process to the first batch
   attempt 1 trains, in phases (the slowest process of each), with and without JAX's
   persistent compilation cache (JAX_COMPILATION_CACHE_DIR, a fresh directory per run, with
   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 and _MIN_ENTRY_SIZE_BYTES=0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.environment import child_env
from kdist._core import free_port

ROOT = Path(__file__).resolve().parents[1]
WORKER = str(ROOT / "tests" / "programs" / "keras_backup.py")
LIMIT_S = 240.0
STEPS_PER_EPOCH, EPOCHS, INTERRUPT_AT = 16, 3, 22


def _one_process_env(**extra: str) -> dict[str, str]:
    return child_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{free_port()}",
        KERAS_DISTRIBUTION_NUM_PROCESSES="1",
        KERAS_DISTRIBUTION_PROCESS_ID="0",
        KERAS_HOME=str(Path(tempfile.gettempdir()) / "kdist-bench-keras-home"),
        **extra,
    )


def _report(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"no report from {WORKER}:\n{stdout[-2000:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def _run(env: dict[str, str], sigterm_at: int | None = None) -> tuple[int, str]:
    """One process of the worker; with `sigterm_at`, SIGTERM once it printed that step."""
    proc = subprocess.Popen(
        [sys.executable, WORKER], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    deadline = time.monotonic() + LIMIT_S
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if sigterm_at is not None and line.strip() == f"step {sigterm_at}":
            proc.send_signal(signal.SIGTERM)
            sigterm_at = None
        if time.monotonic() > deadline:
            proc.kill()
            break
    _, err = proc.communicate(timeout=LIMIT_S)
    if proc.returncode not in (0, 1, 128 + signal.SIGTERM):
        raise RuntimeError(f"worker exited {proc.returncode}:\n{err[-2000:]}")
    return proc.returncode, "".join(lines)


# --- 1. batches trained twice after a resume ---------------------------------------------------


def replayed(impl: str, save_freq: str, interrupt: str) -> int:
    with tempfile.TemporaryDirectory(prefix="kdist-bench-backup-") as directory:
        common = {"BACKUP_DIR": directory, "BACKUP_IMPL": impl, "BACKUP_SAVE_FREQ": save_freq}
        if interrupt == "crash":
            _, out = _run(_one_process_env(**common, BACKUP_CRASH_AT=str(INTERRUPT_AT)))
        else:
            _, out = _run(_one_process_env(**common, BACKUP_STEP_SLEEP="0.05"), INTERRUPT_AT)
        first = [int(line.split()[1]) for line in out.splitlines() if line.startswith("step ")]
        trained_first = first[-1] if first else 0  # the interrupted run's batches
        _, out = _run(_one_process_env(**common))
        second = _report(out)
        trained_second = int(second["iterations"]) - int(second["iterations_at_start"])
        return trained_first + trained_second - EPOCHS * STEPS_PER_EPOCH


def figure_replayed() -> str:
    rows = ["| save_freq | interrupted by | kdist | Keras's own |", "|---|---|---:|---:|"]
    for save_freq in ("epoch", "4"):
        for interrupt in ("crash", "sigterm"):
            counts = [replayed(impl, save_freq, interrupt) for impl in ("kdist", "keras")]
            what = "an exception" if interrupt == "crash" else "SIGTERM"
            rows.append(
                f"| {save_freq} | {what} at batch {INTERRUPT_AT} | {counts[0]} | {counts[1]} |"
            )
    return "Batches trained twice after a resume (of 48):\n\n" + "\n".join(rows)


# --- 2. the cost of a backup ---------------------------------------------------------------------


def figure_cost(runs: int) -> str:
    contenders = [("none", "none", "epoch")] + [
        (f"{impl} save_freq={n}", impl, str(n)) for n in (2, 4) for impl in ("kdist", "keras")
    ]
    epochs: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    saves: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    for _ in range(runs):  # interleaved
        for name, impl, save_freq in contenders:
            with tempfile.TemporaryDirectory(prefix="kdist-bench-backup-") as directory:
                env = _one_process_env(
                    BACKUP_DIR=directory,
                    BACKUP_IMPL=impl,
                    BACKUP_SAVE_FREQ=save_freq,
                    BACKUP_EPOCHS="5",
                )
                _, out = _run(env)
            report = _report(out)
            epochs[name] += report["epoch_seconds"][1:]  # the first compiles
            saves[name] += report["save_seconds"]  # each save, timed around it
    base = statistics.median(epochs["none"])
    rows = [
        "| callback | epoch (ms, median) | + per epoch (ms) | + per save (ms) | one save (ms) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, _, save_freq in contenders:
        median = statistics.median(epochs[name])
        extra = median - base
        per_epoch = STEPS_PER_EPOCH / int(save_freq) if name != "none" else 0
        per_save = f"{extra / per_epoch * 1e3:.1f}" if per_epoch else "-"
        one = f"{statistics.median(saves[name]) * 1e3:.1f}" if saves[name] else "-"
        cells = f"{median * 1e3:.1f} | {extra * 1e3:+.1f} | {per_save} | {one}"
        rows.append(f"| {name} | {cells} |")
    return (
        f"The cost of a backup, one process x 2 CPU devices, DataParallel, 16 batches per epoch "
        f"({runs} runs x 4 epochs each):\n\n" + "\n".join(rows)
    )


# --- 3. a save of a big model -----------------------------------------------------------------

BIG_UNITS = 2_300_000  # Dense 8 -> 2.3M -> 1: 23.0M parameters, x3 with Adam: 276 MB


def big_save(processes: int) -> tuple[list[float], list[float], list[float], list[float], float]:
    """(blocking seconds per save, committed seconds per save, the seconds from a saving
    batch's end to the next batch's end, the same after a batch that saves nothing, MB of
    variables)."""
    with tempfile.TemporaryDirectory(prefix="kdist-bench-save-") as directory:
        root = Path(directory)
        common = {
            "BACKUP_DIR": str(root / "backup"),
            "BACKUP_SAVE_FREQ": "2",
            "BACKUP_EPOCHS": "1",
            "BACKUP_ROWS": "40",  # 10 batches of 4: 5 saves
            "BACKUP_UNITS": str(BIG_UNITS),
            "BACKUP_NO_VALUES": "1",
        }
        if processes == 1:
            _, out = _run(_one_process_env(**common))
            reports = [_report(out)]
        else:
            env = child_env(2, **common)
            args = ["-n", str(processes), "--devices-per-process", "2"]
            logs = root / "logs"
            command = [sys.executable, "-m", "kdist", "launch", *args, "--log-dir", str(logs)]
            done = subprocess.run(
                [*command, "--", sys.executable, WORKER],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=LIMIT_S * 2,
            )
            if done.returncode != 0:
                raise RuntimeError(f"kdist launch exited {done.returncode}:\n{done.stderr[-3000:]}")
            reports = [
                _report((logs / "attempt-0" / f"process-{i}.log").read_text())
                for i in range(processes)
            ]
    blocking = [
        max(r["save_seconds"][i] for r in reports) for i in range(len(reports[0]["save_seconds"]))
    ]
    committed = [
        max(r["committed_seconds"][i] for r in reports)
        for i in range(len(reports[0]["committed_seconds"]))
    ]
    # From each batch's end to the next one's, in the slowest process: batch k (from 1)
    # saves when k is even; the first save (k = 2) is left out, as above.
    ends = [r["batch_ends"] for r in reports]
    gaps = [max(e[i + 1] - e[i] for e in ends) for i in range(len(ends[0]) - 1)]
    after_save = [gap for i, gap in enumerate(gaps) if (i + 1) % 2 == 0 and i + 1 > 2]
    plain = [gap for i, gap in enumerate(gaps) if (i + 1) % 2 == 1 and i > 0]
    megabytes = 3 * (8 * BIG_UNITS + BIG_UNITS + BIG_UNITS + 1) * 4 / 1e6
    return blocking, committed, after_save, plain, megabytes


def figure_save(runs: int) -> str:
    rows = [
        "| job | saves | blocks the step (ms, median) | start -> committed (ms, median) "
        "| batch after a save (ms, median) | batch after none (ms, median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    megabytes = 0.0
    for processes in (1, 2):
        blocking: list[float] = []
        committed: list[float] = []
        after_save: list[float] = []
        plain: list[float] = []
        for _ in range(runs):
            b, c, a, p, megabytes = big_save(processes)
            blocking += b[1:]  # the first also sets Orbax up
            committed += c[1:]
            after_save += a
            plain += p
        cells = [statistics.median(v) * 1e3 for v in (blocking, committed, after_save, plain)]
        rows.append(
            f"| {processes} x 2 devices | {len(blocking)} | "
            + " | ".join(f"{cell:.0f}" for cell in cells)
            + " |"
        )
    return (
        f"A save of {megabytes:.0f} MB of variables (weights + Adam), DataParallel, every 2 "
        f"batches ({runs} runs; the first save of each left out). A batch after a save: from "
        "the end of a batch that saved to the next batch's end (the save's blocking part, "
        "then a training step while Orbax writes); after none: the same after a batch that "
        "saved nothing:\n\n" + "\n".join(rows)
    )


# --- 3b. the restore of a big model's backup on other job shapes -------------------------------

RESTORE_SHAPES = ((2, 2), (1, 4), (4, 1), (1, 1))  # (processes, devices per process)


def _launch(processes: int, devices: int, env: dict[str, str], logs: Path) -> list[dict[str, Any]]:
    """The worker as a job of `processes` x `devices` (`kdist launch`); every report."""
    args = ["-n", str(processes), "--devices-per-process", str(devices), "--log-dir", str(logs)]
    subprocess.run(
        [sys.executable, "-m", "kdist", "launch", *args, "--", sys.executable, WORKER],
        env=child_env(devices, **env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S * 2,
    )  # its status is 143 or 1 at an agreed stop: the reports say what happened
    return [
        _report((logs / "attempt-0" / f"process-{i}.log").read_text()) for i in range(processes)
    ]


def _stopped_big_backup(root: Path, common: dict[str, str]) -> int:
    """A 2 x 2 job of the big model stopped at step 2 with a backup in root/backup; its step."""
    stop = {**common, "BACKUP_DIR": str(root / "backup"), "BACKUP_STOP_AT": "2"}
    stopped = _launch(2, 2, stop, root / "stop-logs")
    if not all(r.get("stopped_step") for r in stopped):
        raise RuntimeError(f"the 2 x 2 job did not stop with a backup: {stopped}")
    return int(stopped[0]["stopped_step"])


_BIG_RESTORE = {
    "BACKUP_EPOCHS": "1",
    "BACKUP_ROWS": "40",
    "BACKUP_UNITS": str(BIG_UNITS),
    "BACKUP_NO_VALUES": "1",
    "BACKUP_SAVE_FREQ": "false",
}


def _disk_bytes(folder: Path) -> int:
    """Bytes the files under `folder` take on the disk (allocated blocks, as du counts)."""
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


_backup_bytes: list[int] = []  # one backup of the big model on the disk, per run


def big_restores() -> dict[tuple[int, int], tuple[float, float, float]]:
    """Seconds of the callback's restore of one 2 x 2 backup of the big model, and of a
    plain Orbax restore of the same checkpoint onto the same shardings before and after
    it (the slowest process of each), on each job shape of RESTORE_SHAPES."""
    with tempfile.TemporaryDirectory(prefix="kdist-bench-restore-") as directory:
        root = Path(directory)
        step = _stopped_big_backup(root, _BIG_RESTORE)
        _backup_bytes.append(_disk_bytes(root / "backup"))  # latest.json and one backup
        seconds = {}
        for processes, devices in RESTORE_SHAPES:
            copy = root / f"backup-{processes}x{devices}"
            shutil.copytree(root / "backup", copy)
            env = {**_BIG_RESTORE, "BACKUP_DIR": str(copy), "BACKUP_PLAIN_RESTORE": "1"}
            reports = _launch(processes, devices, env, root / f"logs-{processes}x{devices}")
            restored = {r.get("restored_step") for r in reports}
            if restored != {step}:
                raise RuntimeError(f"{processes} x {devices} restored {restored}: {reports}")
            seconds[(processes, devices)] = (
                max(r["restore_seconds"][0] for r in reports),
                max(r["plain_restore_seconds"][0] for r in reports),
                max(r["plain_restore_seconds"][1] for r in reports),
            )
        return seconds


def figure_restore(runs: int) -> str:
    seconds: dict[tuple[int, int], list[tuple[float, float, float]]] = {
        shape: [] for shape in RESTORE_SHAPES
    }
    for _ in range(runs):
        for shape, value in big_restores().items():
            seconds[shape].append(value)
    rows = [
        "| resumed on | kdist's restore (ms) | plain Orbax before (ms) | plain Orbax after (ms) "
        "| kdist / plain Orbax |",
        "|---|---:|---:|---:|---:|",
    ]
    for (processes, devices), values in seconds.items():
        ours, before, after = (statistics.median(v[i] for v in values) for i in range(3))
        plain = (before + after) / 2
        rows.append(
            f"| {processes} x {devices} devices | {ours * 1e3:.0f} | {before * 1e3:.0f} | "
            f"{after * 1e3:.0f} | {ours / plain:.2f}x |"
        )
    megabytes = 3 * (8 * BIG_UNITS + BIG_UNITS + BIG_UNITS + 1) * 4 / 1e6
    return (
        f"The restore of a {megabytes:.0f} MB backup (weights + Adam) written by 2 processes x "
        "2 devices (DataParallel, at an agreed stop), on each job shape: the callback's "
        "restore from reading latest.json to the last variable assigned, and Orbax alone "
        "(StandardCheckpointer) restoring the same checkpoint onto the same shardings in the "
        "same processes, before and after it; the slowest process of each, medians of "
        f"{runs} runs; the ratio against the mean of the two plain restores:\n\n"
        + "\n".join(rows)
        + f"\n\nOne backup on the disk: {statistics.median(_backup_bytes) / 1e6:.1f} MB; "
        "keep=2 holds two (and a third while a save is written)."
    )


def figure_profile() -> str:
    """The callback's restore of the big model's 2 x 2 backup on 2 x 2, under cProfile:
    where process 0 spends it (cumulative seconds of the heaviest calls)."""
    import io
    import pstats

    with tempfile.TemporaryDirectory(prefix="kdist-bench-profile-") as directory:
        root = Path(directory)
        _stopped_big_backup(root, _BIG_RESTORE)
        profiles = root / "profiles"
        profiles.mkdir()
        env = {
            **_BIG_RESTORE,
            "BACKUP_DIR": str(root / "backup"),
            "BACKUP_PROFILE_RESTORE": str(profiles),
        }
        reports = _launch(2, 2, env, root / "logs")
        text = io.StringIO()
        stats = pstats.Stats(str(profiles / "restore-0.prof"), stream=text)
        stats.sort_stats("cumulative").print_stats(30)
    lines = [line for line in text.getvalue().splitlines() if line.strip()]
    took = max(r["restore_seconds"][0] for r in reports)
    return (
        f"The callback's restore on 2 x 2 under cProfile ({took * 1e3:.0f} ms, the slowest "
        "process; process 0's profile, cumulative):\n\n" + "\n".join(lines[-34:])
    )


# --- 3c. the import of the backup extra --------------------------------------------------------

IMPORTS = {
    "python -c pass": "pass",
    "import jax": "import jax",
    "import jax, orbax.checkpoint": "import jax, orbax.checkpoint",
}


def figure_import(runs: int) -> str:
    seconds: dict[str, list[float]] = {name: [] for name in IMPORTS}
    for _ in range(max(runs, 5)):  # interleaved
        for name, code in IMPORTS.items():
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", code], env=child_env(1), check=True, timeout=LIMIT_S
            )
            seconds[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    rows = ["| command | wall (ms, median) | over the line above (ms) |", "|---|---:|---:|"]
    previous = None
    for name, median in medians.items():
        extra = "-" if previous is None else f"{(median - previous) * 1e3:+.0f}"
        rows.append(f"| `{name}` | {median * 1e3:.0f} | {extra} |")
        previous = median
    return (
        f"The import of Orbax (the backup extra), fresh interpreters "
        f"({max(runs, 5)} runs each, interleaved):\n\n" + "\n".join(rows)
    )


# --- 4. stop -> first new step under kdist launch --max-restarts 1 ---------------------------


def restart(cache: bool) -> dict[str, float]:
    """Phases of one stop and restart, in seconds (the slowest process of each)."""
    with tempfile.TemporaryDirectory(prefix="kdist-bench-restart-") as directory:
        root = Path(directory)
        extra = {}
        if cache:
            extra = {
                "JAX_COMPILATION_CACHE_DIR": str(root / "jax-cache"),
                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
            }
        env = child_env(
            2,
            BACKUP_DIR=str(root / "backup"),
            BACKUP_SAVE_FREQ="epoch",
            BACKUP_STEP_SLEEP="0.02",
            KERAS_HOME=str(Path(tempfile.gettempdir()) / "kdist-bench-keras-home"),
            **extra,
        )
        args = ["-n", "2", "--devices-per-process", "2", "--max-restarts", "1"]
        command = [sys.executable, "-m", "kdist", "launch", *args, "--log-dir", str(root / "logs")]
        proc = subprocess.Popen(
            [*command, "--", sys.executable, WORKER],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        notes: list[tuple[float, str]] = []
        reader = threading.Thread(
            target=lambda: notes.extend((time.time(), line) for line in proc.stderr or ()),
            daemon=True,
        )
        reader.start()
        sent = 0.0
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if not sent and line.strip() == f"[0] step {INTERRUPT_AT}":
                    pids = next(
                        m.group(1)
                        for _, note in notes
                        if (m := re.search(r"\(pids ([\d, ]+)\)", note))
                    )
                    sent = time.time()
                    os.kill(int(pids.split(", ")[1]), signal.SIGTERM)
            status = proc.wait(timeout=LIMIT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(10)
        if status != 0 or not sent:
            raise RuntimeError(f"kdist launch exited {status}:\n{''.join(n for _, n in notes)}")
        started = next(t for t, note in notes if "attempt 1" in note and "started 2" in note)
        reports = [
            _report((root / "logs" / "attempt-1" / f"process-{i}.log").read_text()) for i in (0, 1)
        ]
        stopped = [
            _report((root / "logs" / "attempt-0" / f"process-{i}.log").read_text()) for i in (0, 1)
        ]
        steps = {r["stopped_step"] for r in stopped} | {r["restored_step"] for r in reports}
        if len(steps) != 1:
            raise RuntimeError(f"stopped and restored at different steps: {steps}")
        skip = int(reports[0]["restored_step"]) % STEPS_PER_EPOCH
        marks = {k: max(float(r["marks"][k]) for r in reports) for k in reports[0]["marks"]}
        first_new = max(float(r["batch_ends"][skip]) for r in reports)
        saved = max(t for t, note in notes if "BackupAndRestore saved step" in note)
        return {
            "SIGTERM -> every process saved at the agreed step": saved - sent,
            "-> every process of attempt 0 exited; the launcher starts attempt 1": started - saved,
            "-> process start + imports (Keras, JAX, kdist)": marks["imported"] - started,
            "-> kdist.initialize": marks["initialized"] - marks["imported"],
            "-> model built and compiled (Keras)": marks["built"] - marks["initialized"],
            "-> fit set up + the restore (on_train_begin)": marks["restored"] - marks["built"],
            "-> first new step (XLA compilation of the train step)": first_new - marks["restored"],
            "total: SIGTERM -> first new step": first_new - sent,
        }


def figure_restart(runs: int) -> str:
    phases: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(runs):
        for cache in (False, True):
            phases[cache].append(restart(cache))
    names = list(phases[False][0])
    rows = ["| phase (s, median) | no cache | persistent cache |", "|---|---:|---:|"]
    for name in names:
        cells = [statistics.median(p[name] for p in phases[c]) for c in (False, True)]
        rows.append(f"| {name} | {cells[0]:.2f} | {cells[1]:.2f} |")
    return (
        "Stop -> first new step, `kdist launch -n 2 --devices-per-process 2 --max-restarts 1`, "
        f"DataParallel ({runs} runs each, interleaved):\n\n" + "\n".join(rows)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="kdist.BackupAndRestore's figures, next to Keras's own, in one run.",
        epilog="Example: python -m benchmarks.backup --runs 3",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per contender (default 3)")
    parser.add_argument(
        "--only",
        default="replayed,cost,save,restore,import,restart",
        help="comma-separated: replayed,cost,save,restore,profile,import,restart",
    )
    args = parser.parse_args(argv)
    chosen = args.only.split(",")
    started = time.monotonic()
    if "replayed" in chosen:
        print(figure_replayed() + "\n", flush=True)
    if "cost" in chosen:
        print(figure_cost(args.runs) + "\n", flush=True)
    if "save" in chosen:
        print(figure_save(args.runs) + "\n", flush=True)
    if "restore" in chosen:
        print(figure_restore(args.runs) + "\n", flush=True)
    if "profile" in chosen:
        print(figure_profile() + "\n", flush=True)
    if "import" in chosen:
        print(figure_import(args.runs) + "\n", flush=True)
    if "restart" in chosen:
        print(figure_restart(args.runs) + "\n", flush=True)
    print(f"({os.cpu_count()} cores; took {time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
