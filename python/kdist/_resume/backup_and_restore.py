"""kdist.BackupAndRestore: Keras's BackupAndRestore for a job of many processes.

A `keras.callbacks.BackupAndRestore` (importing this module imports Keras) that

- saves with every process taking part, as one Orbax checkpoint of global arrays written
  in the background, each shard once by a process that holds it (arrays.py,
  background.py), and commits the backup from process 0 once it is complete (store.py:
  the directory and why it is atomic);
- asks `kdist.should_stop(step)` after every batch, and when it turns True (a stop
  signal or `kdist.request_stop` anywhere in the job) saves at that same step in every
  process and stops training;
- resumes at the next batch: the variables, the optimizer's and the metrics' state and
  the host's random state (host_state.py) are put back, and the batches of the resumed
  epoch that were already trained are read again but not trained on;
- resumes on a job of any shape or layout, each array restored onto this job's sharding
  (reading.py), and refuses a backup of another model (snapshot.py);
- checks the folder before the first step (storage.py), keeps the `keep` newest backups,
  restores the newest one that reads whole in every process (choosing.py, checksums.py),
  and names a save that failed (storage.py) and stops training there;
- removes the backup at the end of training once, from process 0, after every process
  has left training.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdist import _jax_backend, _log, _progress, _state
from kdist._errors import ArgumentTypeError
from kdist._keras.loaded import import_keras
from kdist._resume import (
    arrays,
    background,
    choosing,
    host_state,
    lease,
    reading,
    snapshot,
    storage,
    store,
)
from kdist._together import barrier as barriers
from kdist._together import stop

keras = import_keras("kdist.BackupAndRestore")
_USER = "kdist.BackupAndRestore"
_KerasBackupAndRestore: Any = keras.callbacks.BackupAndRestore


@dataclass(frozen=True)
class _Position:
    """Where training is: `step` batches trained since training started, `batch` of them
    in the epoch `epoch` (0 at an epoch's start)."""

    step: int
    epoch: int
    batch: int


@dataclass
class _Resume:
    """What a restored backup still has to put back when its epoch begins."""

    position: _Position
    metrics: list[Any]
    host: dict[str, Any]
    logs: dict[str, float]


class BackupAndRestore(_KerasBackupAndRestore):  # type: ignore[misc]
    """Backs up the training state of a Keras model and resumes where it stopped, in a job
    of one process or many.

    A `keras.callbacks.BackupAndRestore`, with the same arguments, made for kdist's jobs:

    - **Every process takes part, one writer per file.** The arrays are one Orbax
      checkpoint (`pip install "kdist[backup]"`): each shard of each variable written
      once, by a process that holds it (a sharded variable of `kdist.ModelParallel` or
      Keras's own `ModelParallel` is never gathered). Each process writes its own random
      states; process 0 writes the manifest last and commits the backup.
    - **In the background.** A save blocks the step only while Orbax takes hold of the
      arrays on the host; Orbax writes them while training goes on, one save at a time
      (the next save, the agreed stop and the end of training wait for it first).
    - **Atomic.** A backup is written into a new directory and committed, once complete
      in every process, by a rename and by replacing one small file that names it; a
      process killed at any moment (in the middle of Orbax's write too) leaves the
      previous backup complete and loadable.
    - **Stops together.** After every batch it asks `kdist.should_stop(step)` (`step`: the
      batches trained since training started, the same in every process). When a stop
      is requested (a stop signal such as SIGTERM to any process, or
      `kdist.request_stop(reason)`), every process saves at the same step and training
      stops (`model.stop_training = True`); `stopped_step` says at which step. The
      backup is kept.
    - **Resumes at the next batch.** The model's variables (the seed generators of
      Dropout and other random layers included), the optimizer's (its iteration
      counter) and the metrics' are put back, and so are Python's and NumPy's random
      states (which shuffle the data); the batches of the resumed epoch that were
      already trained are read again but not trained on (other callbacks see them, with
      the backup's logs). A run stopped at any batch and resumed ends with the weights
      of an uninterrupted run with NumPy arrays (shuffle False, True or "batch") and
      `keras.utils.PyDataset`s whose batches depend only on their index, with whole
      epochs (no `steps_per_epoch`). Other data (Python generators, iterators) is read
      from its start again: docs/resume.md says what is replayed.
    - **On any job shape, for the same model.** A backup loads into a job of other
      processes, devices, mesh or distribution: each array is restored onto the
      sharding the variable has there, and training goes on at the saved global step
      (docs/resume.md: what stays exact). Another model (another number of variables,
      or a variable of another shape or dtype) raises `kdist.BackupMismatchError`,
      naming the difference. `kdist.load_backup` reads a backup into a model outside
      training.

    - **Storage that fails is named.** The folder is checked when the callback is made
      and when training begins, before the first step, in every process: it exists or
      can be made, a probe file can be written and flushed there, and the file system
      has room for one more backup; else `kdist.BackupStorageError` (also an OSError)
      names the folder and the reason. A save that fails (no space, an I/O error, the
      folder removed) raises it too, at the next batch, and training stops: the newest
      whole backup stays the one a restart uses. A backup that does not read whole
      (checksums of every file, Orbax's read, the arrays' shapes) is named and the one
      before it is restored; when none reads, the error lists each one tried.

    `backup_dir` must be a directory every process sees (a shared file system across
    hosts), used for nothing else. The format: docs/resume.md.

    Args:
        backup_dir: The backup directory (a string or path).
        save_freq: "epoch" (the default: at the end of every epoch), an integer N
            (every N batches: whenever the step is a multiple of N), or False (only at
            a stop). A stop always saves.
        double_checkpoint: Keras's name for keeping the previous backup too (and falling
            back to it when the latest cannot be read): True keeps at least 2. Defaults
            to False (`keep` decides).
        delete_checkpoint: Remove the backup directory when training ends (not when it
            stopped at a stop request). Defaults to True.
        timeout: Seconds each process waits at a backup's barriers for the others.
            Defaults to None: the initialize timeout (`KDIST_INIT_TIMEOUT`, else 300).
        keep: How many of the newest backups to keep (a positive integer). Defaults to
            2: the newest and the one before it, restored when the newest does not read
            whole (the folder then holds up to `keep` + 1 backups while a save is
            written).

    Attributes:
        restored_step: The step the last `fit` resumed at (None: it started afresh).
        stopped_step: The step the last `fit` stopped at on a stop request (None: it
            did not stop).

    Raises:
        kdist.ArgumentTypeError: an argument has the wrong type (also a TypeError and,
            as Keras raises, a ValueError).
        ValueError: `backup_dir` is empty, `save_freq` is not "epoch", False or a
            positive integer, `keep` is not a positive integer, or `timeout` is not
            positive.
        kdist.BackupStorageError: `backup_dir` cannot be made or written (read-only, a
            file, no permission, full); later, from `fit`: a save failed, or no backup
            kept there reads whole. Also an OSError.

    Example:
        >>> import tempfile, keras, numpy as np, kdist
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="adam", loss="mse")
        >>> backup = kdist.BackupAndRestore(tempfile.mkdtemp(), save_freq=2)
        >>> history = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, epochs=2,
        ...                     callbacks=[backup], verbose=0)
        >>> backup.restored_step is None, backup.stopped_step is None
        (True, True)
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.BackupAndRestore

    def __init__(
        self,
        backup_dir: str | os.PathLike[str],
        save_freq: str | int | bool = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
        *,
        timeout: float | None = None,
        keep: int = 2,
    ) -> None:
        directory = _checked_directory(backup_dir)
        every = _checked_save_freq(save_freq)
        for name, flag in (
            ("double_checkpoint", double_checkpoint),
            ("delete_checkpoint", delete_checkpoint),
        ):
            if not isinstance(flag, bool):
                raise ArgumentTypeError(
                    f"BackupAndRestore: {name} must be True or False. Received: "
                    f"{name}={flag!r} of type {type(flag).__name__}"
                )
        self._timeout = _checked_timeout(timeout)
        self.keep = _checked_keep(keep)
        arrays.load_orbax("kdist.BackupAndRestore")  # a clear error now, not at the first save
        storage.check_writable(Path(directory), _USER)  # before the model is even built
        self._saves = background.BackgroundSave("kdist.BackupAndRestore")
        super().__init__(
            backup_dir=directory,
            save_freq=save_freq if every is None else every,
            double_checkpoint=double_checkpoint,
            delete_checkpoint=delete_checkpoint,
        )
        self._every = every  # save every N steps; None: at epoch ends or only at a stop
        self._lease: lease.LeaseHolder | None = None  # process 0's, while it trains
        self.restored_step: int | None = None
        self.stopped_step: int | None = None
        self._start(processes=1, process_id=0)

    # --- the state of one fit -----------------------------------------------------------

    def _start(self, processes: int, process_id: int) -> None:
        self._processes, self._process_id = processes, process_id
        self._step = 0  # batches trained since training started (across resumes)
        self._epoch = 0
        self._batch_in_epoch = 0  # batches of this epoch trained (or skipped)
        self._skip = 0  # batches of this epoch to read without training
        self._saved_step: int | None = None
        self._pending: _Resume | None = None
        self._epoch_host: dict[str, object] = {}
        self.restored_step = None
        self.stopped_step = None

    @property
    def _root(self) -> Path:
        return Path(self.backup_dir)

    # --- Keras's hooks ------------------------------------------------------------------

    def on_train_begin(self, logs: Any = None) -> None:
        _progress.note_backups()  # this attempt's progress is what it saves
        model = self.model  # with JAX: the state is synced into the variables first
        _SkipTrainedBatches.remove(model)
        if not model.built:
            raise ValueError(
                "To use the BackupAndRestore callback, you model must be built before you "
                f"call `fit()`. Model {model} is unbuilt. You can build it beforehand by "
                "calling it on a batch of data."
            )
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        self._start(*_jax_backend.process_count_and_index())
        background.wait_all()  # a save of an earlier fit in this process is committed first
        # Before the first step, in every process: the folder can take one more backup.
        storage.check_writable(self._root, _USER, one_backup_bytes=_backup_bytes(model))
        if self._process_id == 0:
            # One job at a time in a backup folder: refused here, before any step, when
            # another job trains with it (process 0 holds the lease while this one trains).
            self._lease = lease.take(self._root, _this_run(), _USER)
            store.remove_unnamed(self._root)  # what a killed save left; nobody writes now
        position = self._restore(model)
        if position is None:
            name = "kdist.BackupAndRestore: training starts without a backup"
        else:
            name = f"kdist.BackupAndRestore: training resumes at step {position.step}"
        # Every process restored the same backup (or none) before any process writes.
        barriers.barrier(name, timeout=self._timeout)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch, self._batch_in_epoch, self._skip = epoch, 0, 0
        pending, self._pending = self._pending, None
        if pending is not None and pending.position.epoch == epoch:
            host_state.restore(pending.host)
            if pending.position.batch > 0:
                model = self.model
                for variable, value in zip(model.metrics_variables, pending.metrics, strict=True):
                    variable.assign(value)
                self._skip = self._batch_in_epoch = pending.position.batch
                _SkipTrainedBatches.install(model, pending.position.batch, pending.logs)
        self._epoch_host = host_state.capture()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        done = batch + 1  # batches of this epoch after this call (Keras's batch: the last)
        if done <= self._skip:
            return  # read again, not trained: already in the restored state
        self._saves.raise_if_failed()  # a save that failed in the background stops training
        before, self._step = self._step, self._step + done - self._batch_in_epoch
        self._batch_in_epoch = done
        stopping = bool(stop.should_stop(self._step))
        due = self._every is not None and self._step // self._every > before // self._every
        if stopping or due:
            self._save_backup(logs)
        if stopping:
            self._wait_for_the_save(f"step {self._step} saved at the agreed stop")
            self.stopped_step = self._step
            self._model.stop_training = True  # not self.model: no state sync needed
            _log.say(
                f"BackupAndRestore saved step {self._step} to {self.backup_dir} at the agreed "
                "stop; training stops here, and resumes at the next batch when the job "
                "runs again"
            )

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self.stopped_step is not None:
            return  # saved at the stop, in the middle of this epoch (or at its end)
        if self.save_freq == "epoch" and self._saved_step != self._step:
            self._save_backup(logs, epoch_done=True)

    def on_train_end(self, logs: Any = None) -> None:
        if self._lease is not None:  # training is over: the folder is free for another job
            self._lease.release()
            self._lease = None
        model = self._model
        _SkipTrainedBatches.remove(model)
        model._initial_epoch = None  # the next fit starts where its own backup says
        if self.stopped_step is not None:
            return  # stopped on request: saved, committed; how the next run resumes
        # Nobody writes once every process has left training and the last save is
        # committed; one process removes it, and nobody reads it before it is gone.
        self._wait_for_the_save("every process left training, the last backup committed")
        if not self.delete_checkpoint:
            return
        if self._process_id == 0:
            store.remove_all(self._root)
        barriers.barrier("kdist.BackupAndRestore: the backup is removed", timeout=self._timeout)

    # Keras's own entry points, in case a subclass or a user calls them.
    def _save_model(self) -> None:
        self._save_backup({})

    def _load_model(self) -> None:
        self._restore(self.model)

    # --- saving ---------------------------------------------------------------------------

    def _save_backup(self, logs: Any, epoch_done: bool = False) -> None:
        """Every process, at the same step: its host file and its part of the arrays
        (in the background); process 0 commits once the arrays are complete."""
        model = self.model  # with JAX: the state is synced into the variables first
        step = self._step
        if epoch_done:
            position, host = _Position(step, self._epoch + 1, 0), host_state.capture()
        else:
            position = _Position(step, self._epoch, self._batch_in_epoch)
            host = self._epoch_host  # as the epoch began, before it drew its order
        self._saves.wait()  # one save at a time: the previous one is committed first
        variables = snapshot.training_variables(model)
        written = self._root / f"{store.INCOMING_PREFIX}{step:09d}"
        values = {arrays.key_of(group, i): v.value for group, i, v in variables}
        root = self._root
        commit = None
        if self._process_id == 0:
            manifest = {
                "format": store.FORMAT,
                "version": store.VERSION,
                "step": position.step,
                "epoch": position.epoch,
                "batch": position.batch,
                "logs": _numbers(logs),
                "job": snapshot.this_job(),
                "variables": [snapshot.describe(*entry).to_json() for entry in variables],
                "keras": str(keras.__version__),
            }
            keep = max(self.keep, 2 if self.double_checkpoint else 1)
            processes = self._processes

            def commit() -> None:
                store.commit(root, written, step, manifest, num_processes=processes, keep=keep)

        def failed(error: BaseException) -> BaseException:
            try:
                kept = store.named_backups(root)[0]
            except OSError:
                kept = None
            return storage.save_failed(_USER, root, step, error, kept)

        try:
            written = store.incoming(root, step)
            store.write_host_file(written, self._process_id, host)
        except OSError as error:
            raise failed(error) from error
        self._saves.start(written, values, commit, failed, lambda: _progress.note_saved(step))
        self._saved_step = step

    def _wait_for_the_save(self, what: str) -> None:
        """Every process: the save in flight is committed (process 0) before any goes on."""
        self._saves.wait()
        barriers.barrier(f"kdist.BackupAndRestore: {what}", timeout=self._timeout)

    @property
    def committed_seconds(self) -> list[float]:
        """Seconds from each save's start to its commit (benchmarks/backup.py)."""
        return list(self._saves.committed_seconds)

    # --- restoring ------------------------------------------------------------------------

    def _restore(self, model: Any) -> _Position | None:
        """Loads the newest kept backup that reads whole in every process (an older one
        when the newest does not, saying so); None when there is none.

        Raises:
            kdist.BackupStorageError: backups are kept, but none reads whole.
        """

        def check(directory: Path, manifest_crc: int | None, share: tuple[int, int]) -> Any:
            return reading.check_files(model, directory, manifest_crc, share)

        def read(directory: Path, manifest: Any) -> Any:
            return reading.read_arrays(model, directory, manifest, host_of=self._process_id)

        found = choosing.newest_whole(
            self._root, check, read, _USER, timeout=self._timeout, forget_damaged=True
        )
        if found is None:
            return None
        directory, whole = found
        return self._load(model, directory, whole)

    def _load(self, model: Any, directory: Path, whole: reading.Whole) -> _Position:
        """Puts a backup read whole into the model and the callback."""
        manifest, values = whole.manifest, whole.values
        position = _Position(int(manifest["step"]), int(manifest["epoch"]), int(manifest["batch"]))
        host = whole.host or {}
        variables = snapshot.training_variables(model)
        metrics = []
        for group, i, variable in variables:
            value = values[arrays.key_of(group, i)]
            if group == "metrics":  # the metrics when their epoch begins (after its reset)
                metrics.append(value)
            else:
                variable.assign(value)
        self._pending = _Resume(
            position,
            metrics,
            host,
            {str(k): float(v) for k, v in dict(manifest.get("logs", {})).items()},
        )
        model._initial_epoch = position.epoch  # Keras's own: fit starts at this epoch
        self._step = position.step
        self.restored_step = position.step
        saved_job = snapshot.job_in_words(manifest["job"])
        this_job = snapshot.job_in_words(snapshot.this_job())
        job = f"written by {saved_job}" + ("" if saved_job == this_job else f", now {this_job}")
        _log.say(
            f"BackupAndRestore resumes from {directory} ({job}): step {position.step}, epoch "
            f"{position.epoch} after its batch {position.batch}"
            if position.batch
            else f"BackupAndRestore resumes from {directory} ({job}): step {position.step}, "
            f"at the start of epoch {position.epoch}"
        )
        return position


class _SkipTrainedBatches:
    """Stands in for the model's train function over the first batches of a resumed
    epoch: reads each batch from the data (so the data stands where the interrupted run
    stood) without training on it, and returns the backup's logs; after the last one it
    puts the model's train function back."""

    def __init__(self, model: Any, calls: int, logs: dict[str, float]) -> None:
        self.model, self.original, self.calls, self.logs = model, model.train_function, calls, logs

    @classmethod
    def install(cls, model: Any, batches: int, logs: dict[str, float]) -> None:
        per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))
        model.train_function = cls(model, math.ceil(batches / per_call), logs)

    @staticmethod
    def remove(model: Any) -> None:
        function = getattr(model, "train_function", None)
        if isinstance(function, _SkipTrainedBatches):
            model.train_function = function.original

    def __call__(self, state: Any, iterator: Any) -> tuple[dict[str, float], Any]:
        next(iterator)
        for _ in range(max(1, int(getattr(self.model, "steps_per_execution", 1) or 1)) - 1):
            try:
                next(iterator)
            except StopIteration:
                break
        self.calls -= 1
        if self.calls <= 0:
            self.model.train_function = self.original
        return dict(self.logs), state


# --- arguments -----------------------------------------------------------------------------


def _checked_directory(backup_dir: object) -> str:
    if not isinstance(backup_dir, (str, os.PathLike)):
        raise ArgumentTypeError(
            "BackupAndRestore: backup_dir must be a directory path (a string or "
            f"os.PathLike). Received: backup_dir={backup_dir!r} of type "
            f"{type(backup_dir).__name__}"
        )
    directory = os.fspath(backup_dir)
    if not isinstance(directory, str):
        raise ArgumentTypeError(
            f"BackupAndRestore: backup_dir must be a str path. Received: {backup_dir!r}"
        )
    if not directory:
        raise ValueError(
            "Empty `backup_dir` argument passed. BackupAndRestore: a directory every "
            "process of the job sees, used for nothing else. Received: backup_dir=''"
        )
    return directory


def _checked_save_freq(save_freq: object) -> int | None:
    """N for "every N batches"; None for "epoch" and False."""
    if save_freq == "epoch" or save_freq is False:
        return None
    if isinstance(save_freq, bool) or not isinstance(save_freq, (int, str)):
        raise ArgumentTypeError(
            "Invalid value for argument `save_freq`. Received: save_freq="
            f"{save_freq!r}. Expected either 'epoch' or an integer value. "
            "BackupAndRestore: 'epoch', a positive integer (every N batches) or False (only "
            f"at a stop); received a {type(save_freq).__name__}"
        )
    if isinstance(save_freq, str) or save_freq < 1:
        raise ValueError(
            "Invalid value for argument `save_freq`. Received: save_freq="
            f"{save_freq!r}. Expected either 'epoch' or an integer value. "
            "BackupAndRestore: 'epoch', a positive integer (every N batches) or False (only "
            "at a stop)"
        )
    return save_freq


def _checked_keep(keep: object) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise ArgumentTypeError(
            "BackupAndRestore: keep must be a positive integer (how many of the newest "
            f"backups to keep). Received: keep={keep!r} of type {type(keep).__name__}"
        )
    if keep < 1:
        raise ValueError(
            "BackupAndRestore: keep must be a positive integer (how many of the newest "
            f"backups to keep; 2 by default). Received: keep={keep!r}"
        )
    return keep


def _backup_bytes(model: Any) -> int:
    """About the bytes one backup of `model` takes: every variable of its training state
    once (each array is written by one replica), and kdist's small files."""
    total = 64 * 1024
    for _, _, variable in snapshot.training_variables(model):
        value = variable.value
        total += int(value.size) * int(value.dtype.itemsize)
    return total


def _checked_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ArgumentTypeError(
            "BackupAndRestore: timeout must be a number of seconds or None. Received: "
            f"timeout={timeout!r} of type {type(timeout).__name__}"
        )
    if not timeout > 0 or math.isinf(timeout):
        raise ValueError(
            "BackupAndRestore: timeout must be a positive, finite number of seconds. "
            f"Received: timeout={timeout!r}"
        )
    return float(timeout)


def _numbers(logs: Any) -> dict[str, float]:
    """The logs that are numbers (Keras's logs hold floats and 0-d arrays)."""
    numbers = {}
    for key, value in dict(logs or {}).items():
        try:
            numbers[str(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return numbers


def _this_run() -> str:
    """This job's name in a backup folder's lease (kdist._resume.lease.this_run)."""
    spec = _state.active_spec()
    if spec is None:
        return lease.this_run("", None, "")
    return lease.this_run(spec.run_id, spec.coordinator_address, spec.job_id)
