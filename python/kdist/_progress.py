"""Whether an attempt got anywhere: what a process tells the program that started it.

`kdist launch` gives each process a file to tell (`KDIST_PROGRESS_FILE`). The process
writes it when it first reports a step through `kdist.should_stop(step)`, when it first
reports a later step, and each time `kdist.BackupAndRestore` saved a backup: a few writes
an attempt, never one a step. When the attempt ends, its starter reads every process's
file: an attempt made progress when a backup was saved, or, for a program without
`kdist.BackupAndRestore`, when a step past the one it started from was reported. The
thrash guard of `kdist launch --nodes` counts only the re-forms of attempts that made
none (docs/configuration.md, "Elastic").
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

VARIABLE = "KDIST_PROGRESS_FILE"


@dataclass
class Progress:
    """What one process reported in one attempt."""

    first_step: int | None = None  # the first step it reported
    step: int | None = None  # the newest step it wrote down (not every one)
    backups: bool = False  # it trains with kdist.BackupAndRestore
    saves: int = 0  # backups saved in this attempt
    saved_step: int | None = None  # the newest one's step

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


_mine = Progress()


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
    """A step reported through kdist.should_stop: written the first time, and once more
    for the first later step (enough to say the attempt stepped on)."""
    if _mine.first_step is None:
        _mine.first_step = _mine.step = step
        _write()
    elif _mine.step is not None and step > _mine.step and _mine.step == _mine.first_step:
        _mine.step = step
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
    fields = Progress.__dataclass_fields__
    return Progress(**{k: v for k, v in data.items() if k in fields})


def any_progress(paths: Iterable[Path]) -> bool:
    """Whether any of these processes made progress in its attempt."""
    return any(read(path).made_progress for path in paths)
