"""A cluster member that trains a small Keras model (JAX backend) with a backup callback.

Configured by environment variables (every process of a job gets the same ones):

  BACKUP_DIR          the backup directory
  BACKUP_IMPL         kdist (kdist.BackupAndRestore), keras (keras.callbacks.BackupAndRestore)
                      or none (no backup: the uninterrupted reference)
  BACKUP_DIST         dp (kdist.DataParallel); mp (kdist.ModelParallel, mesh (2, 2) batch x
                      model, the Dense kernels split on "model", each process's two devices
                      one row of the mesh: every process holds every shard); mp_across (the
                      same mesh with its "model" axis across the processes: each process
                      holds half of each kernel, and feeds the whole global batch);
                      keras_mp (Keras's own ModelParallel on mp_across's mesh); keras_dp
                      (Keras's own DataParallel)
  BACKUP_SAVE_FREQ    "epoch" (default), an integer, or "false"
  BACKUP_EPOCHS       epochs (default 3)
  BACKUP_ROWS         rows per process (default 64; batch size 4: 16 batches per epoch)
  BACKUP_UNITS        width of the hidden layer (default 16)
  BACKUP_SHUFFLE      1 to shuffle (default 0)
  BACKUP_DATA         arrays (default) or pydataset
  BACKUP_STEP_SLEEP   seconds each batch sleeps (default 0), so that a signal lands mid-epoch
  BACKUP_SLOW_END     "PID:SECONDS": that process sleeps before the last epoch's end
                      callbacks (before the backup's own), so the others finish first
  BACKUP_HANG_COMMIT  "PID": that process hangs (prints "committing", sleeps) when it is
                      about to commit a backup after the first one: a SIGKILL then lands
                      between the shard files and the commit
  BACKUP_STALL_WRITE  "PID": in that process, Orbax's write of every backup after the first
                      one stalls (prints "orbax is writing", sleeps) among the write's own
                      futures, in Orbax's background thread: the checkpoint is never
                      finalized there, the other processes wait for it at Orbax's barrier,
                      and a SIGKILL then lands while Orbax is writing the backup
  BACKUP_HANG_RESTORE "PID": that process hangs (prints "restoring an older backup", sleeps)
                      when it is about to read a kept backup after the newest one (the
                      fallback's restore): a SIGKILL then lands in the middle of it
  BACKUP_KEEP         the callback's keep= (default: the callback's own, 2)
  BACKUP_CRASH_AT     "STEP": every process raises after that global batch (a crash)
  BACKUP_STOP_AT      "STEP": process 0 calls kdist.request_stop after that batch of this
                      run (an agreed stop a batch or two later, as a SIGTERM would make)
  BACKUP_REPORT_RESTORED  1: the report also has every weight and optimizer variable as
                      the fit began (after the restore), gathered: "restored_weights",
                      "restored_optimizer"
  BACKUP_NO_VALUES    1: the report leaves out the variables' values (a big model's,
                      benchmarks/backup.py's save figure)
  BACKUP_PLAIN_RESTORE  1: when training begins, the latest backup's arrays are also
                      restored by Orbax alone (StandardCheckpointer, onto each variable's
                      own sharding, as docs/resume.md's example), once before the
                      callback's restore and once after it: "plain_restore_seconds"
                      (benchmarks/backup.py's restore figure)
  BACKUP_PROFILE_RESTORE  a folder: the callback's restore runs under cProfile, its
                      statistics written there as restore-<process id>.prof
  BACKUP_SEED         the program's own seed (keras.utils.set_random_seed before
                      kdist.initialize, which keeps it); default: the job seed kdist agrees on.
                      Under `kdist launch --max-restarts`, only on the first attempt
                      (KDIST_RESTART_COUNT 0): a restarted attempt takes everything random
                      from the backup

Each process prints "step N" after every batch it trains (N: the global batch count of this
run's fit, from 1), and at the end one JSON line: the final variables (every value, gathered
across processes), the optimizer's iteration count, where the backup restored from, the step
it stopped at, cluster_spec().restart_count, the files it wrote and removed under BACKUP_DIR
(an audit hook), the seconds each save and the restore took and, for benchmarks/backup.py,
when each phase ended (wall clock), each batch's end, each epoch's seconds and the
optimizer's count after the restore.
"""

import json
import os
import sys
import threading
import time

MARKS = {"started": time.time()}  # wall-clock times of the phases (benchmarks/backup.py)

os.environ.setdefault("KERAS_BACKEND", "jax")

BACKUP_DIR = os.environ["BACKUP_DIR"]
IMPL = os.environ.get("BACKUP_IMPL", "kdist")
DIST = os.environ.get("BACKUP_DIST", "dp")
_freq = os.environ.get("BACKUP_SAVE_FREQ", "epoch")
SAVE_FREQ: object = "epoch" if _freq == "epoch" else (False if _freq == "false" else int(_freq))
EPOCHS = int(os.environ.get("BACKUP_EPOCHS", "3"))
ROWS = int(os.environ.get("BACKUP_ROWS", "64"))
UNITS = int(os.environ.get("BACKUP_UNITS", "16"))
SHUFFLE = os.environ.get("BACKUP_SHUFFLE", "0") == "1"
DATA = os.environ.get("BACKUP_DATA", "arrays")
STEP_SLEEP = float(os.environ.get("BACKUP_STEP_SLEEP", "0"))
SLOW_END = os.environ.get("BACKUP_SLOW_END", "")
HANG_COMMIT = os.environ.get("BACKUP_HANG_COMMIT", "")
STALL_WRITE = os.environ.get("BACKUP_STALL_WRITE", "")
STOP_AT = int(os.environ.get("BACKUP_STOP_AT", "0"))
REPORT_RESTORED = os.environ.get("BACKUP_REPORT_RESTORED") == "1"
PLAIN_RESTORE = os.environ.get("BACKUP_PLAIN_RESTORE") == "1"
PROFILE_RESTORE = os.environ.get("BACKUP_PROFILE_RESTORE", "")
CRASH_AT = int(os.environ.get("BACKUP_CRASH_AT", "0"))
HANG_RESTORE = os.environ.get("BACKUP_HANG_RESTORE", "")
KEEP = os.environ.get("BACKUP_KEEP", "")

# --- what this process does to the files under BACKUP_DIR --------------------------------

_audit: list[list[object]] = []
_audit_lock = threading.Lock()
_root = os.path.abspath(BACKUP_DIR)


def _ours(path: object) -> str | None:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if not isinstance(path, str):
        return None
    full = os.path.abspath(path)
    return os.path.relpath(full, _root) if full == _root or full.startswith(_root + "/") else None


def _audit_hook(event: str, args: tuple[object, ...]) -> None:
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        kind = "write" if writes else None
    elif event in ("os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "os.mkdir"):
        path, kind = args[0], event.split(".")[1]
    else:
        return
    name = _ours(path) if kind else None
    if name is not None:
        with _audit_lock:
            _audit.append([time.time(), kind, name])


sys.addaudithook(_audit_hook)

import h5py  # noqa: E402

_h5_file = h5py.File


class _AuditedH5File(_h5_file):  # type: ignore[misc, valid-type]
    """h5py writes in C, out of the audit hook's sight: its opens for writing are logged."""

    def __init__(self, name: object, mode: str = "r", *args: object, **kwargs: object) -> None:
        path = _ours(name)
        if path is not None and mode != "r":
            with _audit_lock:
                _audit.append([time.time(), "write", path])
        super().__init__(name, mode, *args, **kwargs)


h5py.File = _AuditedH5File

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kdist  # noqa: E402

if os.environ.get("BACKUP_SEED") and os.environ.get("KDIST_RESTART_COUNT", "0") == "0":
    keras.utils.set_random_seed(int(os.environ["BACKUP_SEED"]))
MARKS["imported"] = time.time()
kdist.initialize()
MARKS["initialized"] = time.time()
spec = kdist.cluster_spec()
assert spec is not None
me, processes = spec.process_id, spec.num_processes

import jax  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

if DIST == "dp":
    strategy = kdist.DataParallel()
    kdist.set_distribution(strategy)
    shard, shards = strategy.data_shard_id, strategy.num_data_shards
elif DIST in ("mp", "mp_across", "keras_mp"):
    by_process = [[d for d in jax.devices() if d.process_index == p] for p in range(processes)]
    if DIST == "mp":
        mesh_devices = [row[:2] for row in by_process]  # a row of the mesh per process
    else:
        mesh_devices = [[row[0] for row in by_process], [row[1] for row in by_process]]
    if DIST == "keras_mp":
        mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"], np.array(mesh_devices))
        layout_map = keras.distribution.LayoutMap(mesh)
    else:
        mesh = kdist.DeviceMesh((2, 2), ("batch", "model"), mesh_devices)
        layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/dense_in/kernel"] = (None, "model")
    layout_map[".*/dense_out/kernel"] = ("model", None)
    if DIST == "keras_mp":
        keras.distribution.set_distribution(
            keras.distribution.ModelParallel(layout_map=layout_map, auto_shard_dataset=False)
        )
    else:
        kdist.set_distribution(kdist.ModelParallel(layout_map=layout_map))
    # mp: each process feeds its own half; otherwise each process holds both batch shards
    # and feeds the whole global batch.
    shard, shards = (me, processes) if DIST == "mp" else (0, 1)
elif DIST == "keras_dp":
    keras.distribution.set_distribution(keras.distribution.DataParallel(auto_shard_dataset=False))
    shard, shards = me, processes
else:
    raise SystemExit(f"unknown BACKUP_DIST {DIST!r}")

# One global data set of ROWS rows per process; each process feeds its own contiguous part
# (the whole of it when it holds every batch shard), in batches of BATCH rows per part.
total = ROWS * processes
rng = np.random.default_rng(7)
features = rng.normal(size=(total, 8)).astype("float32")
targets = (features @ np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(8, 1) + 0.5).astype(
    "float32"
)
part = total // shards
mine = slice(shard * part, (shard + 1) * part)
x, y = features[mine], targets[mine]
BATCH = 4 * processes // shards


class Batches(keras.utils.PyDataset):
    """This process's part of the data as a PyDataset: batch i is rows [4i, 4i + 4)."""

    def __len__(self) -> int:
        return len(x) // BATCH

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        rows = slice(index * BATCH, (index + 1) * BATCH)
        return x[rows], y[rows]


model = keras.Sequential(
    [
        keras.Input((8,)),
        keras.layers.Dense(UNITS, activation="relu", name="dense_in"),
        keras.layers.Dropout(0.25),
        keras.layers.Dense(1, name="dense_out"),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")


class Progress(keras.callbacks.Callback):
    """Prints "step N" after every trained batch; sleeps; crashes or slows down on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.batch_ends: list[float] = []  # the time of each batch's end
        self.epoch_seconds: list[float] = []

    def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
        self.epoch_began = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: object = None) -> None:
        self.step += 1
        self.batch_ends.append(time.time())
        print(f"step {self.step}", flush=True)
        if CRASH_AT and self.step == CRASH_AT:
            raise RuntimeError(f"crash at step {self.step}")
        if STOP_AT and self.step == STOP_AT and me == 0:
            kdist.request_stop(f"BACKUP_STOP_AT={STOP_AT}")
        if STEP_SLEEP:
            time.sleep(STEP_SLEEP)

    def on_epoch_end(self, epoch: int, logs: object = None) -> None:
        self.epoch_seconds.append(time.perf_counter() - self.epoch_began)
        if SLOW_END and epoch == EPOCHS - 1:
            pid, seconds = SLOW_END.split(":")
            if int(pid) == me:
                time.sleep(float(seconds))


class Restored(keras.callbacks.Callback):
    """After the backup's on_train_begin: when the restore ended, the optimizer's count."""

    iterations: int | None = None
    values: dict[str, dict[str, list[float]]] = {}  # noqa: RUF012 (replaced, never mutated)

    def on_train_begin(self, logs: object = None) -> None:
        MARKS["restored"] = time.time()
        self.iterations = int(np.asarray(self.model.optimizer.iterations.value))
        if REPORT_RESTORED:
            self.values = {
                "restored_weights": {v.path: gathered(v.value) for v in self.model.weights},
                "restored_optimizer": {
                    v.path: gathered(v.value) for v in self.model.optimizer.variables
                },
            }


plain_restore_seconds: list[float] = []


class PlainRestore(keras.callbacks.Callback):
    """Orbax alone restores the latest backup's arrays onto the model's own shardings
    (what kdist's restore is measured against), timed; the values are dropped."""

    def on_train_begin(self, logs: object = None) -> None:
        import orbax.checkpoint as ocp

        model = self.model
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        root = os.path.abspath(BACKUP_DIR)
        with open(os.path.join(root, "latest.json")) as stream:
            latest = os.path.join(root, json.load(stream)["backup"])
        with open(os.path.join(latest, "manifest.json")) as stream:
            manifest = json.load(stream)
        groups = {
            "trainable": model.trainable_variables,
            "non_trainable": model.non_trainable_variables,
            "optimizer": model.optimizer.variables,
            "metrics": model.metrics_variables,
        }
        target = {
            f"{v['group']}_{v['position']:05d}": jax.ShapeDtypeStruct(
                tuple(v["shape"]),
                v["dtype"],
                sharding=groups[v["group"]][v["position"]].value.sharding,
            )
            for v in manifest["variables"]
        }
        started = time.perf_counter()
        with ocp.StandardCheckpointer() as checkpointer:
            restored = checkpointer.restore(os.path.join(latest, "state"), target)
        jax.block_until_ready(restored)
        plain_restore_seconds.append(time.perf_counter() - started)


def gathered(value: object) -> list[float]:
    full = multihost_utils.process_allgather(value, tiled=True)
    return [float(v) for v in np.asarray(full, dtype="float64").reshape(-1)]


save_seconds: list[float] = []
restore_seconds: list[float] = []  # the callback's restore (reading the backup included)
progress, restored = Progress(), Restored()
callbacks: list[keras.callbacks.Callback] = [progress]
backup = None
if IMPL == "kdist":

    class TimedBackup(kdist.BackupAndRestore):
        """Times each save and the restore; hangs before a commit on demand
        (BACKUP_HANG_COMMIT)."""

        def _save_backup(self, *args: object, **kwargs: object) -> None:
            started = time.perf_counter()
            super()._save_backup(*args, **kwargs)
            save_seconds.append(time.perf_counter() - started)

        def _restore(self, model: object) -> object:
            profile = None
            if PROFILE_RESTORE:
                import cProfile

                profile = cProfile.Profile()
                profile.enable()
            started = time.perf_counter()
            position = super()._restore(model)
            restore_seconds.append(time.perf_counter() - started)
            if profile is not None:
                profile.disable()
                profile.dump_stats(os.path.join(PROFILE_RESTORE, f"restore-{me}.prof"))
            return position

    if HANG_COMMIT and int(HANG_COMMIT) == me:
        from kdist._resume import store

        _commit = store.commit
        _commits = [0]

        def hanging_commit(*args: object, **kwargs: object) -> object:
            _commits[0] += 1
            if _commits[0] >= 2:
                print("committing", flush=True)
                time.sleep(600)
            return _commit(*args, **kwargs)

        store.commit = hanging_commit

    if STALL_WRITE and int(STALL_WRITE) == me:
        import orbax.checkpoint as ocp

        _async_save = ocp.PyTreeCheckpointHandler.async_save
        _writes = [0]

        class _Stall:
            """One more of the write's futures: Orbax waits for it before it finalizes."""

            def result(self, timeout: float | None = None) -> None:
                print("orbax is writing", flush=True)
                time.sleep(600)

            def cancel(self) -> None:
                pass

        async def stalling_async_save(self: object, *args: object, **kwargs: object) -> object:
            futures = await _async_save(self, *args, **kwargs)
            _writes[0] += 1
            return [_Stall(), *(futures or [])] if _writes[0] >= 2 else futures

        ocp.PyTreeCheckpointHandler.async_save = stalling_async_save

    if HANG_RESTORE and int(HANG_RESTORE) == me:
        from kdist._resume import reading

        _check_files, _read_arrays = reading.check_files, reading.read_arrays
        _checked = [0]

        def counted_check(*args: object, **kwargs: object) -> object:
            _checked[0] += 1
            return _check_files(*args, **kwargs)

        def hanging_read(*args: object, **kwargs: object) -> object:
            if _checked[0] >= 2:  # the newest did not read whole: an older one
                print("restoring an older backup", flush=True)
                time.sleep(600)
            return _read_arrays(*args, **kwargs)

        reading.check_files = counted_check
        reading.read_arrays = hanging_read

    try:
        keep = {"keep": int(KEEP)} if KEEP else {}
        backup = TimedBackup(BACKUP_DIR, save_freq=SAVE_FREQ, **keep)
    except Exception as caught:  # reported (no step trained), then raised: the job ends
        report = {"process_id": me, "error": f"{type(caught).__name__}: {caught}", "steps": 0}
        print(json.dumps(report), flush=True)
        raise
    if PLAIN_RESTORE:
        callbacks.append(PlainRestore())  # before the callback's restore
    callbacks.append(backup)
    if PLAIN_RESTORE:
        callbacks.append(PlainRestore())  # and after it
elif IMPL == "keras":

    class TimedKerasBackup(keras.callbacks.BackupAndRestore):
        def _save_model(self) -> None:
            started = time.perf_counter()
            super()._save_model()
            save_seconds.append(time.perf_counter() - started)

    callbacks.append(TimedKerasBackup(BACKUP_DIR, save_freq=SAVE_FREQ))
elif IMPL != "none":
    raise SystemExit(f"unknown BACKUP_IMPL {IMPL!r}")
callbacks.append(restored)
MARKS["built"] = time.time()

data = Batches() if DATA == "pydataset" else x
started = time.perf_counter()
error = None
failure: BaseException | None = None
try:
    if DATA == "pydataset":
        model.fit(data, epochs=EPOCHS, shuffle=SHUFFLE, verbose=0, callbacks=callbacks)
    else:
        model.fit(
            x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=SHUFFLE, verbose=0, callbacks=callbacks
        )
except Exception as caught:  # reported, then re-raised: the job ends as it would
    error, failure = f"{type(caught).__name__}: {caught}", caught
fit_seconds = time.perf_counter() - started


report = {
    "process_id": me,
    "num_processes": processes,
    "error": error,
    "fit_seconds": fit_seconds,
    "save_seconds": save_seconds,
    "restore_seconds": restore_seconds,
    "plain_restore_seconds": plain_restore_seconds,
    "audit": _audit,
    "backup_dir_exists": os.path.isdir(BACKUP_DIR),
    "restart_count": spec.restart_count,
    "previous_num_processes": spec.previous_num_processes,
    "marks": MARKS,
    "batch_ends": progress.batch_ends,
    "epoch_seconds": progress.epoch_seconds,
    "iterations_at_start": restored.iterations,
    **restored.values,
}
if error is None and os.environ.get("BACKUP_NO_VALUES") != "1":
    report["weights"] = {v.path: gathered(v.value) for v in model.weights}
    report["optimizer"] = {v.path: gathered(v.value) for v in model.optimizer.variables}
if error is None:
    report["iterations"] = int(np.asarray(model.optimizer.iterations.value))
    report["loss"] = [float(v) for v in model.history.history.get("loss", [])]
if backup is not None:
    report["restored_step"] = backup.restored_step
    report["stopped_step"] = backup.stopped_step
    # From each save's start to its commit (a background save commits later).
    report["committed_seconds"] = list(getattr(backup, "committed_seconds", save_seconds))
print(json.dumps(report), flush=True)
if failure is not None:
    # Uncaught, so kdist's liveness channel ends the others (SystemExit(1) would count as
    # a finished process, and they would wait for it in their next collective).
    raise failure
