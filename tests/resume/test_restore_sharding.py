"""What a restore produces before Keras assigns it: a backup of a model-parallel model,
read by a job whose processes each hold a different part of every kernel.

Keras's `Variable.assign` lays any value out on the variable's sharding again, so the
weights come out right even where the restore read every array whole, as NumPy, in every
process: the other resume tests cannot tell. These watch the values on their way to
`assign` (wrapped in each process) and the process's peak memory while it reads:

- each array is already a `jax.Array` on its variable's sharding, each process holding
  only the shards of its own device (a quarter of each kernel, a different quarter in
  each process), each shard with the saved values of its part;
- the peak host memory of the restore is bounded by the process's share of the model,
  not by the whole model (at a model that does not fit one host, the difference between
  resuming and running out of memory).

The job: 4 processes x 1 CPU device, `kdist.ModelParallel` on a (1, 4) mesh ("batch",
"model"), two Dense kernels of 2048 x 8192 float32 (64 MiB each) split on "model". The
backup is written by `kdist.BackupAndRestore` in one job (weights set to a known pattern,
one batch with a learning rate of 0, kept) and read by `kdist.load_backup` in another.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.support import NEEDS_KERAS, NEEDS_ORBAX
from kdist.testing import run_job

pytestmark = [pytest.mark.multiprocess, NEEDS_KERAS, NEEDS_ORBAX]

PROCESSES = 4
FEATURES, WIDE = 2048, 8192
JOB_SECONDS = 240  # bounds each job; nothing is timed against it
JOB_ENV = {"KERAS_BACKEND": "jax", "KERAS_HOME": "/tmp/kdist-test-keras-home"}
# The restore's peak, above what the process held before it, may reach this many times
# the process's share of the model. Orbax's reading of a shard holds up to three copies
# of it at once (the bytes read from its file, the array they make, the array on the
# device; measured: 2 to 3 shares, 64 to 96 MiB, in steps of a kernel's quarter, 16 MiB,
# and nothing else worth a MiB). A reading of whole arrays holds at least the whole model,
# PROCESSES (4) times the share, when it hands the arrays over (measured: 5.5 to 8
# shares, 176 to 256 MiB).
PEAK_SHARES = 3.75
_PATTERN_MODULUS = 16_777_213  # below 2**24: every value is exact in float32


def pattern(shape: tuple[int, ...], index: tuple[slice, ...], salt: int) -> np.ndarray:
    """The part `index` of the known values of a variable of `shape` (the `salt`-th of the
    model): its flat positions, offset by the salt, modulo a prime below 2**24."""
    flat = np.zeros((), dtype=np.int64)
    stride = 1
    for size, part in reversed(list(zip(shape, index, strict=True))):
        positions = np.arange(size, dtype=np.int64)[part]
        flat = flat + positions.reshape(positions.shape + (1,) * flat.ndim) * stride
        stride *= size
    return ((flat + salt * 7919) % _PATTERN_MODULUS).astype(np.float32)


def _model(keras: Any) -> Any:
    """The model, on the (1, 4) mesh: each process's one device holds a quarter of each
    kernel and of the first bias; the last bias is replicated."""
    import kdist

    mesh = kdist.DeviceMesh((1, PROCESSES), ("batch", "model"))
    layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/wide_in/kernel"] = (None, "model")
    layout_map[".*/wide_in/bias"] = ("model",)
    layout_map[".*/wide_out/kernel"] = ("model", None)
    kdist.set_distribution(kdist.ModelParallel(layout_map=layout_map))
    return keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(WIDE, name="wide_in"),
            keras.layers.Dense(FEATURES, name="wide_out"),
        ]
    )


def save_patterned_backup(backup_dir: str) -> str:
    """In each process of the saving job: every weight set to its pattern, one batch
    trained with a learning rate of 0 (the weights stay as set) and backed up; returns
    the name of the backup committed."""
    import keras

    import kdist

    model = _model(keras)
    for salt, variable in enumerate(model.weights):
        whole = tuple(slice(None) for _ in variable.shape)
        variable.assign(pattern(tuple(variable.shape), whole, salt))
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    zeros = np.zeros((PROCESSES, FEATURES), dtype=np.float32)
    backup = kdist.BackupAndRestore(backup_dir, save_freq=1, delete_checkpoint=False)
    model.fit(zeros, zeros, batch_size=PROCESSES, epochs=1, verbose=0, callbacks=[backup])
    return str(json.loads((Path(backup_dir) / "latest.json").read_text())["backup"])


def _status_bytes(field: str) -> int:
    """A size of this process from /proc/self/status ("VmRSS", "VmHWM"), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _index(index: tuple[slice, ...], shape: tuple[int, ...]) -> list[list[int]]:
    return [list(part.indices(size)[:2]) for part, size in zip(index, shape, strict=True)]


def _describe(variable: Any, value: Any, sharding: Any, salt: int) -> dict[str, Any]:
    """What the restore handed `variable.assign`, beside the `sharding` the variable had
    then."""
    import jax

    shape = tuple(variable.shape)
    report: dict[str, Any] = {
        "path": variable.path,
        "type": f"{type(value).__module__}.{type(value).__name__}",
        "jax_array": isinstance(value, jax.Array),
        "variable_shards": sorted(
            (device.id, _index(index, shape))
            for device, index in sharding.addressable_devices_indices_map(shape).items()
        ),
        "whole_bytes": math.prod(shape) * np.dtype(variable.dtype).itemsize,
    }
    if not isinstance(value, jax.Array):
        report["held_bytes"] = int(np.asarray(value).nbytes)
        return report
    report["on_the_variables_sharding"] = value.sharding.is_equivalent_to(sharding, len(shape))
    report["shards"] = sorted(
        (shard.device.id, _index(shard.index, shape)) for shard in value.addressable_shards
    )
    report["held_bytes"] = sum(int(shard.data.nbytes) for shard in value.addressable_shards)
    report["values_as_saved"] = all(
        np.array_equal(np.asarray(shard.data), pattern(shape, shard.index, salt))
        for shard in value.addressable_shards
    )
    return report


def restore_and_watch(backup_dir: str) -> dict[str, Any]:
    """In each process of the reading job: `kdist.load_backup` twice (the first reading
    loads Orbax's and TensorStore's code and pools; the second is measured), with Keras's
    `Variable.assign` wrapped to see each value the restore produced and the process's
    peak memory from the restore's start to the first `assign`."""
    import keras
    import orbax.checkpoint  # noqa: F401 (imported before any reading)

    import kdist

    model = _model(keras)
    variables = list(model.weights)
    salts = {id(variable): salt for salt, variable in enumerate(variables)}
    variable_class = type(variables[0])
    assign = variable_class.assign
    handed: list[tuple[Any, Any, Any]] = []  # (variable, value, its sharding then)
    peaks: list[int] = []

    def watched_assign(self: Any, value: Any) -> Any:
        if not peaks:
            peaks.append(_status_bytes("VmHWM"))
        handed.append((self, value, self.value.sharding))
        return assign(self, value)

    variable_class.assign = watched_assign
    try:
        kdist.load_backup(model, backup_dir)
        handed.clear()
        peaks.clear()
        gc.collect()
        before = _status_bytes("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        kdist.load_backup(model, backup_dir)
    finally:
        variable_class.assign = assign
    restored = [
        _describe(variable, value, sharding, salts[id(variable)])
        for variable, value, sharding in handed
    ]
    handed.clear()
    share = sum(
        int(shard.data.nbytes)
        for variable in variables
        for shard in variable.value.addressable_shards
    )
    return {
        "restored": restored,
        "share_bytes": share,
        "model_bytes": sum(report["whole_bytes"] for report in restored),
        "restore_peak_bytes": peaks[0] - before,
    }


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    """Each reading process's report, from the backup the saving job left."""
    backup_dir = str(tmp_path_factory.mktemp("restore-sharding") / "backup")
    steps = run_job(
        save_patterned_backup,
        backup_dir,
        num_processes=PROCESSES,
        timeout=JOB_SECONDS,
        env=JOB_ENV,
    )
    assert steps == ["step-000000001"] * PROCESSES
    yield run_job(
        restore_and_watch,
        backup_dir,
        num_processes=PROCESSES,
        timeout=JOB_SECONDS,
        env=JOB_ENV,
    )


def test_each_array_is_restored_onto_its_variables_sharding_in_this_process_s_shards(
    reports: list[dict[str, Any]],
) -> None:
    """Before Keras assigns it, every value is a jax.Array on its variable's sharding,
    holding in this process exactly the shards the variable holds here (a different
    quarter of each kernel in each process), each with the saved values of its part."""
    paths = ["wide_in/kernel", "wide_in/bias", "wide_out/kernel", "wide_out/bias"]
    kernel_parts: dict[str, set[str]] = {path: set() for path in paths}
    for process_id, report in enumerate(reports):
        restored = {entry["path"].split("/", 1)[1]: entry for entry in report["restored"]}
        assert sorted(restored) == sorted(paths), report["restored"]
        for path, entry in restored.items():
            where = f"process {process_id}, {path}"
            assert entry["jax_array"], (
                f"{where}: the restore handed Keras a {entry['type']} of {entry['held_bytes']} "
                f"bytes, expected a jax.Array on the variable's sharding "
                f"(this process's shards: {entry['variable_shards']})"
            )
            assert entry["on_the_variables_sharding"], f"{where}: {entry}"
            assert entry["shards"] == entry["variable_shards"], f"{where}: {entry}"
            assert entry["values_as_saved"], f"{where}: a shard's values are not the saved ones"
            kernel_parts[path].add(repr(entry["shards"]))
            split = path != "wide_out/bias"
            expected_bytes = entry["whole_bytes"] // (PROCESSES if split else 1)
            assert entry["held_bytes"] == expected_bytes, f"{where}: {entry}"
    # Each process holds other parts (the replicated bias: the same whole array, on
    # another device).
    assert {path: len(parts) for path, parts in kernel_parts.items()} == {
        "wide_in/kernel": PROCESSES,
        "wide_in/bias": PROCESSES,
        "wide_out/kernel": PROCESSES,
        "wide_out/bias": PROCESSES,  # the same index, on a different device in each
    }


def test_the_restore_s_peak_memory_is_bounded_by_the_process_s_share(
    reports: list[dict[str, Any]],
) -> None:
    """The most memory a process took while reading the backup (above what it held
    before) stays within PEAK_SHARES of its share of the model: a reading of whole
    arrays takes the whole model, PROCESSES times the share, in every process."""
    mib = 1 << 20
    for process_id, report in enumerate(reports):
        share, whole, peak = (
            report["share_bytes"],
            report["model_bytes"],
            report["restore_peak_bytes"],
        )
        assert share * (PROCESSES - 1) < whole, report  # the share is a quarter, or near
        assert peak <= PEAK_SHARES * share, (
            f"process {process_id}: the restore took {peak / mib:.1f} MiB at its peak; "
            f"expected at most {PEAK_SHARES} x its share of the model ({share / mib:.1f} MiB "
            f"of {whole / mib:.1f} MiB)"
        )
