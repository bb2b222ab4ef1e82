"""kdist.load_backup: the latest committed backup of `kdist.BackupAndRestore`, loaded into
a built Keras model by any program (an evaluation, an export, a job of another shape),
with or without `kdist.initialize()`.

What it loads: the model's weights (its trainable and non-trainable variables: Dropout's
and other layers' seed generators are among the latter) and, when the model's optimizer
is built, the optimizer's variables (its iteration counter, learning rate and slots), so
that a `fit` goes on from the backup's optimizer state. Never the metrics' running totals
(they belong to the epoch the backup interrupted; `fit` and `evaluate` reset them), nor
the position in training or the random states (the callback's own resume puts those back).

This module imports neither Keras nor Orbax: Orbax is imported when a backup is read
(arrays.py), and the model is the caller's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kdist._errors import ArgumentTypeError
from kdist._resume import arrays, choosing, reading, snapshot, storage, store

_USER = "kdist.load_backup"
_ADVICE = (
    "load it into a model built as the one that wrote it (the same layers, units and "
    "dtypes; and, when its optimizer is built, the same optimizer), or leave this "
    "model's optimizer unbuilt to load the weights only."
)


def load_backup(model: Any, backup_dir: str | os.PathLike[str]) -> int:
    """Loads the latest backup that `kdist.BackupAndRestore` committed in `backup_dir`
    into `model`, each variable onto the device(s) and sharding it has in this program;
    returns the backup's step.

    The backup is read whole or not at all (the checksums of its files, Orbax's read,
    the arrays' shapes): when the newest kept backup does not read whole, it is named
    and the one before it is loaded; when none reads, `kdist.BackupStorageError` lists
    each one tried. It only reads: a read-only folder serves.

    The program need not have the saving job's shape: a backup of 2 processes x 2
    devices loads into one process on one device, or into a `kdist.ModelParallel` model
    on another mesh. It loads the model's weights (trainable and non-trainable
    variables) and, when `model.optimizer` is built, the optimizer's variables too
    (build it first, `model.optimizer.build(model.trainable_variables)`, to train on from
    the backup's optimizer state); never the metrics. It works with or without
    `kdist.initialize()`; in a job of several processes every process calls it (Orbax
    reads collectively; each process reads only the parts of each array it holds).

    Args:
        model: A built Keras model (JAX backend) of the architecture that wrote the
            backup.
        backup_dir: The callback's `backup_dir` (a string or path): the directory that
            holds `latest.json`.

    Returns:
        The step of the backup loaded (batches trained when it was saved).

    Raises:
        kdist.ArgumentTypeError: `model` is not a Keras model, or `backup_dir` not a path.
        ValueError: `model` is not built.
        FileNotFoundError: `backup_dir` holds no committed backup (it is missing, or no
            backup was committed there yet, or training ended and removed it).
        kdist.BackupStorageError: `backup_dir` is a file or cannot be read, or no backup
            kept there reads whole (also an OSError).
        kdist.BackupMismatchError: the backup is of another model (the message names the
            first variable, or the group of variables, that differs).
        OSError: the backup cannot be read (damaged, or of another tool).
        ImportError: Orbax is not installed (`pip install "kdist[backup]"`).

    Example:
        >>> import tempfile, keras, numpy as np, kdist
        >>> backup_dir = tempfile.mkdtemp()
        >>> def built():
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        ...     model.compile(optimizer="adam", loss="mse")
        ...     return model
        >>> trained = built()
        >>> backup = kdist.BackupAndRestore(backup_dir, save_freq=2, delete_checkpoint=False)
        >>> _ = trained.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, epochs=1,
        ...                 callbacks=[backup], verbose=0)
        >>> fresh = built()
        >>> kdist.load_backup(fresh, backup_dir)
        4
        >>> bool(np.array_equal(fresh.get_weights()[0], trained.get_weights()[0]))
        True
    """
    if not all(hasattr(model, name) for name in ("built", "weights", "trainable_variables")):
        raise ArgumentTypeError(
            f"{_USER}: model must be a Keras model (keras.Model). Received: model={model!r} "
            f"of type {type(model).__name__}"
        )
    if not model.built:
        raise ValueError(
            f"{_USER}: the model must be built before a backup is loaded into it (call it on "
            "a batch of data, or model.build(input_shape), first). Received: the unbuilt "
            f"model {getattr(model, 'name', model)!r}"
        )
    root = _checked_directory(backup_dir)
    storage.check_readable(root, _USER)
    optimizer = getattr(model, "optimizer", None)
    groups = ["trainable", "non_trainable"]
    if optimizer is not None and getattr(optimizer, "built", False):
        groups.append("optimizer")

    def check(directory: Path, manifest_crc: int | None, share: tuple[int, int]) -> Any:
        return reading.check_files(
            model, directory, manifest_crc, share, groups=groups, advice=_ADVICE
        )

    def read(directory: Path, manifest: Any) -> Any:
        return reading.read_arrays(model, directory, manifest, groups=groups, user=_USER)

    found = choosing.newest_whole(root, check, read, _USER) if root.is_dir() else None
    if found is None:
        _nothing_committed(root)
    assert found is not None
    whole: reading.Whole = found[1]
    for group, i, variable in snapshot.training_variables(model, groups):
        variable.assign(whole.values[arrays.key_of(group, i)])
    return int(whole.manifest["step"])


def _checked_directory(backup_dir: object) -> Path:
    if not isinstance(backup_dir, (str, os.PathLike)):
        raise ArgumentTypeError(
            f"{_USER}: backup_dir must be a directory path (a string or os.PathLike). "
            f"Received: backup_dir={backup_dir!r} of type {type(backup_dir).__name__}"
        )
    directory = os.fspath(backup_dir)
    if not isinstance(directory, str) or not directory:
        raise ArgumentTypeError(
            f"{_USER}: backup_dir must be a non-empty str path. Received: {backup_dir!r}"
        )
    return Path(directory)


def _nothing_committed(root: Path) -> None:
    """Raises FileNotFoundError, saying what `root` holds instead of a committed backup."""
    expected = (
        f"{_USER}: expected a committed backup of kdist.BackupAndRestore in {root} (a "
        f"{store.LATEST} naming a {store.STEP_PREFIX}* folder beside it)"
    )
    advice = (
        "Give the backup_dir the callback saved into: it keeps its backup after an agreed "
        "stop or a crash, and removes it when training ends unless "
        "delete_checkpoint=False."
    )
    raise FileNotFoundError(f"{expected}; found {_what_is_in(root)}. {advice}")


def _what_is_in(root: Path) -> str:
    """What a directory holds instead of a committed backup, in a few words."""
    if not root.exists():
        return "no such directory"
    if not root.is_dir():
        return "a file, not a directory"
    entries = sorted(entry.name for entry in root.iterdir())
    if not entries:
        return "an empty directory"
    incoming = [name for name in entries if name.startswith(store.INCOMING_PREFIX)]
    if incoming and len(incoming) == len(entries):
        return (
            f"no {store.LATEST}, only backups never committed ({', '.join(incoming[:3])}: "
            "a save that was still being written when its job ended)"
        )
    shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
    return f"no {store.LATEST}; it holds {shown}"
