"""kdist._progress: what a process tells its starter about its attempt's progress, and how
the starter reads it (the thrash guard's input, issue 59)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdist import _progress


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fresh process's progress, told to a file in tmp_path."""
    path = _progress.file_of(tmp_path, 0)
    monkeypatch.setenv(_progress.VARIABLE, str(path))
    monkeypatch.setattr(_progress, "_mine", _progress.Progress())
    return path


def test_steps_are_written_twice_an_attempt_never_once_a_step(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = []
    real = _progress._write
    monkeypatch.setattr(_progress, "_write", lambda: (writes.append(1), real()))
    _progress.note_step(7)
    assert not _progress.read(fresh).made_progress  # its first step: nowhere yet
    for step in range(8, 1000):
        _progress.note_step(step)
    assert len(writes) == 2
    told = _progress.read(fresh)
    assert (told.first_step, told.step, told.made_progress) == (7, 8, True)


def test_with_backups_only_a_save_is_progress(fresh: Path) -> None:
    _progress.note_backups()
    _progress.note_step(0)
    _progress.note_step(5)
    assert not _progress.read(fresh).made_progress  # steps a loss would throw away
    _progress.note_saved(4)
    told = _progress.read(fresh)
    assert (told.saves, told.saved_step, told.made_progress) == (1, 4, True)


def test_a_missing_or_damaged_file_is_no_progress(tmp_path: Path) -> None:
    missing = tmp_path / "progress-0.json"
    assert _progress.read(missing) == _progress.Progress()
    for text in ("", "{", "[1]", json.dumps({"first_step": "0", "step": [], "saves": True})):
        missing.write_text(text)
        assert not _progress.read(missing).made_progress, text
    assert not _progress.any_progress([missing, tmp_path / "nothing.json"])


def test_without_the_variable_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(_progress.VARIABLE, raising=False)
    monkeypatch.setattr(_progress, "_mine", _progress.Progress())
    monkeypatch.chdir(tmp_path)
    _progress.note_step(1)
    _progress.note_saved(1)
    assert list(tmp_path.iterdir()) == []
