"""Whether an attempt got anywhere: what a process tells the program that started it.

`kdist launch` gives each process a file to tell (`KDIST_PROGRESS_FILE`). The process
writes it when it first reports a step through `kdist.should_stop(step)`, when it first
reports a later step, then at most ten times a second (STEP_WRITE_SECONDS) as its steps go on,
and each time `kdist.BackupAndRestore` saved a backup: never one write a step. Each step
written carries its wall-clock time, from which the starter splits the job's time by
cause (goodput, cpp/core/job/goodput.h). When the attempt ends, its starter reads every process's
file: an attempt made progress when a backup was saved, or, for a program without
`kdist.BackupAndRestore`, when a step past the one it started from was reported. The
thrash guard of `kdist launch --nodes` counts only the re-forms of attempts that made
none (docs/configuration.md, "Elastic").
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict

VARIABLE = "KDIST_PROGRESS_FILE"
STEP_WRITE_SECONDS = 0.1  # the newest step is written at most this often


@dataclass
class Progress:
    """What one process reported in one attempt."""

    first_step: int | None = None  # the first step it reported
    step: int | None = None  # the newest step it wrote down (not every one)
    backups: bool = False  # it trains with kdist.BackupAndRestore
    saves: int = 0  # backups saved in this attempt
    saved_step: int | None = None  # the newest one's step
    first_step_unix_millis: int = 0  # when it reported its first step (wall clock; 0: unknown)
    step_unix_millis: int = 0  # when it reported `step`

    @property
    def made_progress(self) -> bool:
        """A backup saved; without backups, a step past the first.

        Example:
            >>> Progress(first_step=3, step=3).made_progress
            False
            >>> Progress(first_step=3, step=4).made_progress
            True
            >>> Progress(first_step=3, step=9, backups=True).made_progress
            False
        """
        if self.backups:
            return self.saves > 0
        return self.first_step is not None and self.step is not None and self.step > self.first_step


@dataclass(frozen=True)
class Steps:
    """The steps one machine's processes reported in one attempt, merged: the first
    (the earliest reported, at the earliest time) and the newest; -1: none."""

    first_step: int = -1
    first_step_unix_millis: int = 0
    step: int = -1
    step_unix_millis: int = 0


class StepWords(TypedDict):
    """Steps as the keywords of kdist._core.RendezvousAgent.report."""

    first_step: int
    first_step_unix_millis: int
    step: int
    step_unix_millis: int


def step_words(steps: Steps) -> StepWords:
    """Steps as the keywords of kdist._core.RendezvousAgent.report."""
    return StepWords(
        first_step=steps.first_step,
        first_step_unix_millis=steps.first_step_unix_millis,
        step=steps.step,
        step_unix_millis=steps.step_unix_millis,
    )


_mine = Progress()
_last_write = 0.0  # monotonic: when the newest step was last written


def _write() -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    scratch = f"{path}.{os.getpid()}.tmp"
    try:
        with open(scratch, "w") as out:
            json.dump(asdict(_mine), out)
        os.replace(scratch, path)  # whole or not at all: the reader never sees half
    except OSError:
        pass  # the starter then reads no progress: the guard counts this attempt


def note_step(step: int) -> None:
    """A step reported through kdist.should_stop: written the first time, once more for
    the first later step (enough to say the attempt stepped on), then at most once every
    STEP_WRITE_SECONDS (the newest step and its time: goodput's and `kdist status`'s)."""
    global _last_write
    if _mine.first_step is None:
        millis = int(time.time() * 1000)
        _mine.first_step = _mine.step = step
        _mine.first_step_unix_millis = _mine.step_unix_millis = millis
        _last_write = time.monotonic()
        _write()
    elif _mine.step is not None and step > _mine.step:
        first_later = _mine.step == _mine.first_step
        _mine.step = step
        _mine.step_unix_millis = int(time.time() * 1000)
        now = time.monotonic()
        if first_later or now - _last_write >= STEP_WRITE_SECONDS:
            _last_write = now
            _write()


def note_backups() -> None:
    """This process trains with kdist.BackupAndRestore: its progress is what it saves."""
    if not _mine.backups:
        _mine.backups = True
        _write()


def note_saved(step: int) -> None:
    """kdist.BackupAndRestore saved a backup at `step`."""
    _mine.backups = True
    _mine.saves += 1
    _mine.saved_step = step
    _write()


def file_of(folder: Path, process_id: int) -> Path:
    """Where process `process_id` of an attempt in `folder` tells its progress."""
    return folder / f"progress-{process_id}.json"


def read(path: Path) -> Progress:
    """A process's progress file; an empty Progress when it wrote none."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return Progress()
    if not isinstance(data, dict):
        return Progress()

    def step(name: str) -> int | None:
        value = data.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    saves = data.get("saves")
    return Progress(
        first_step=step("first_step"),
        step=step("step"),
        backups=data.get("backups") is True,
        saves=saves if isinstance(saves, int) and not isinstance(saves, bool) else 0,
        saved_step=step("saved_step"),
        first_step_unix_millis=step("first_step_unix_millis") or 0,
        step_unix_millis=step("step_unix_millis") or 0,
    )


def steps_of(paths: Iterable[Path]) -> Steps:
    """The steps these processes reported, merged (Steps).

    Example:
        >>> steps_of([])
        Steps(first_step=-1, first_step_unix_millis=0, step=-1, step_unix_millis=0)
    """
    merged = Steps()
    for path in paths:
        p = read(path)
        if p.first_step is not None and p.first_step_unix_millis > 0:
            first = p.first_step if merged.first_step < 0 else min(merged.first_step, p.first_step)
            at = p.first_step_unix_millis
            if merged.first_step_unix_millis > 0:
                at = min(at, merged.first_step_unix_millis)
            merged = Steps(first, at, merged.step, merged.step_unix_millis)
        if p.step is not None and p.step_unix_millis > 0 and p.step >= merged.step:
            at = p.step_unix_millis
            if p.step == merged.step:
                at = max(at, merged.step_unix_millis)
            merged = Steps(merged.first_step, merged.first_step_unix_millis, p.step, at)
    return merged


def any_progress(paths: Iterable[Path]) -> bool:
    """Whether any of these processes made progress in its attempt."""
    return any(read(path).made_progress for path in paths)
