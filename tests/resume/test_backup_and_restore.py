"""kdist.BackupAndRestore in this process (8 CPU devices; a job of one process).

Real Keras models (JAX backend) trained under kdist's distributions, interrupted by an
exception after a backup (a crash) and trained again with a new model: the resumed run
must end with the uninterrupted run's weights and optimizer state, bit for bit. Stops
agreed across real processes (SIGTERM), sharded variables across processes, kills during
a save and the one-writer rule are in test_backup_multiprocess.py.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kdist
from helpers.keras_backup_models import (
    BATCH,
    EPOCHS,
    ROWS,
    SEED,
    Crash,
    build,
    crash_after,
    data,
    data_parallel,
    settled,
)
from helpers.support import NEEDS_KERAS, NEEDS_ORBAX

pytestmark = [NEEDS_KERAS, NEEDS_ORBAX]


@pytest.fixture
def keras(keras_on_jax: Any) -> Any:
    return keras_on_jax


def model_parallel(shape: tuple[int, int] = (2, 4)) -> Any:
    mesh = kdist.DeviceMesh(shape, ("batch", "model"))
    layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/dense_in/kernel"] = (None, "model")
    layout_map[".*/dense_out/kernel"] = ("model", None)
    return kdist.ModelParallel(layout_map=layout_map)


def keras_model_parallel(keras: Any) -> Any:
    import jax

    mesh = keras.distribution.DeviceMesh((2, 4), ["batch", "model"], jax.devices())
    layout_map = keras.distribution.LayoutMap(mesh)
    layout_map[".*/dense_in/kernel"] = (None, "model")
    layout_map[".*/dense_out/kernel"] = ("model", None)
    return keras.distribution.ModelParallel(layout_map=layout_map)


def state(model: Any) -> list[np.ndarray]:
    """Every variable of the training state (model, optimizer), as NumPy arrays."""
    return [np.asarray(v.value) for v in [*model.weights, *model.optimizer.variables]]


def assert_same_state(expected: list[np.ndarray], got: list[np.ndarray]) -> None:
    assert len(expected) == len(got)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)  # exact: the same operations on the same bits


def fit(model: Any, fit_data: Any, callbacks: list[Any], shuffle: Any = False) -> Any:
    if isinstance(fit_data, tuple):
        x, y = fit_data
        return model.fit(
            x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=shuffle, verbose=0, callbacks=callbacks
        )
    return model.fit(fit_data, epochs=EPOCHS, shuffle=shuffle, verbose=0, callbacks=callbacks)


def interrupted_then_resumed(
    keras: Any,
    directory: Path,
    distribution: Callable[[], Any],
    *,
    crash_at: int,
    save_freq: Any,
    shuffle: Any = False,
    fit_data: Any = None,
) -> tuple[Any, Any]:
    """Trains until a crash after `crash_at` batches, then a new model (another seed: what
    must be put back is put back, not drawn again) until the end."""
    fit_data = fit_data if fit_data is not None else data()
    first = kdist.BackupAndRestore(directory, save_freq=save_freq)
    with pytest.raises(Crash):
        fit(build(keras, distribution), fit_data, [first, crash_after(keras, crash_at)], shuffle)
    assert (directory / "latest.json").is_file()
    model = build(keras, distribution, seed=SEED + 1)
    second = kdist.BackupAndRestore(directory, save_freq=save_freq)
    history = fit(model, fit_data, [second], shuffle)
    return model, (second, history)


def uninterrupted(keras: Any, distribution: Callable[[], Any], **kwargs: Any) -> Any:
    model = build(keras, distribution)
    history = fit(model, kwargs.get("fit_data") or data(), [], kwargs.get("shuffle", False))
    return model, history


# --- the callback and its arguments --------------------------------------------------------


def test_it_is_keras_s_backup_and_restore_with_keras_s_arguments(
    keras: Any, tmp_path: Path
) -> None:
    backup = kdist.BackupAndRestore(tmp_path, save_freq=3, double_checkpoint=True)
    assert isinstance(backup, keras.callbacks.BackupAndRestore)
    assert (backup.backup_dir, backup.save_freq) == (str(tmp_path), 3)
    assert backup.double_checkpoint is True and backup.delete_checkpoint is True
    assert type(backup).__module__ == "kdist"
    assert kdist.BackupAndRestore(tmp_path, save_freq=False).save_freq is False


def test_without_orbax_the_callback_says_which_extra_to_install(
    keras: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "orbax.checkpoint", None)  # import fails as if absent
    with pytest.raises(ImportError) as raised:
        kdist.BackupAndRestore(tmp_path)
    message = str(raised.value)
    assert message.startswith(
        "kdist.BackupAndRestore stores its backups with Orbax (orbax-checkpoint), which is not "
        "installed in this environment ("
    ), message
    assert message.endswith(
        'Install kdist\'s backup extra: pip install "kdist[backup]" (or pip install '
        "orbax-checkpoint)."
    ), message
    assert not tmp_path.joinpath("latest.json").exists()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"backup_dir": ""}, ValueError, r"^Empty `backup_dir` argument passed\. "),
        ({"backup_dir": 7}, kdist.ArgumentTypeError, r"backup_dir must be a directory path"),
        (
            {"save_freq": "batch"},
            ValueError,
            r"^Invalid value for argument `save_freq`\. Received: save_freq='batch'",
        ),
        ({"save_freq": 0}, ValueError, r"a positive integer \(every N batches\)"),
        ({"save_freq": True}, kdist.ArgumentTypeError, r"received a bool"),
        ({"save_freq": 2.5}, kdist.ArgumentTypeError, r"received a float"),
        ({"delete_checkpoint": "no"}, kdist.ArgumentTypeError, r"delete_checkpoint must be"),
        ({"timeout": 0}, ValueError, r"timeout must be a positive, finite number"),
        ({"timeout": "5"}, kdist.ArgumentTypeError, r"timeout must be a number of seconds"),
    ],
)
def test_arguments_are_checked_with_keras_s_sentence_first(
    keras: Any, tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    arguments = {"backup_dir": tmp_path, **kwargs}
    with pytest.raises(error, match=match):
        kdist.BackupAndRestore(**arguments)
    if error is kdist.ArgumentTypeError:
        assert issubclass(error, TypeError) and issubclass(error, ValueError)


# --- resumed equals uninterrupted -------------------------------------------------------------


@pytest.mark.parametrize(
    ("crash_at", "save_freq"),
    [(23, 5), (9, 1), (37, False), (40, "epoch")],
    ids=["every-5", "every-batch", "only-at-a-stop", "epoch"],
)
def test_a_crashed_run_resumed_ends_with_the_uninterrupted_run_s_state(
    keras: Any, tmp_path: Path, crash_at: int, save_freq: Any
) -> None:
    expected, reference = uninterrupted(keras, data_parallel)
    if save_freq is False:
        # Nothing is saved without a stop: the crash leaves no backup, and training
        # starts over (with the seed of the first run, so it ends the same).
        first = kdist.BackupAndRestore(tmp_path, save_freq=False)
        with pytest.raises(Crash):
            fit(build(keras, data_parallel), data(), [first, crash_after(keras, crash_at)])
        assert not (tmp_path / "latest.json").exists()
        return
    model, (backup, history) = interrupted_then_resumed(
        keras, tmp_path, data_parallel, crash_at=crash_at, save_freq=save_freq
    )
    saved = 32 if save_freq == "epoch" else crash_at - crash_at % save_freq
    assert backup.restored_step == saved
    assert (
        int(np.asarray(model.optimizer.iterations.value)) == EPOCHS * ROWS // BATCH
    )  # none replayed
    assert_same_state(state(expected), state(model))
    # The resumed epoch's loss is the uninterrupted one: the metrics' totals came back too.
    resumed_epochs = EPOCHS - saved // (ROWS // BATCH)
    assert history.history["loss"] == reference.history["loss"][-resumed_epochs:]
    assert not tmp_path.exists()  # removed at the end of training


@pytest.mark.parametrize("shuffle", [True, "batch"])
def test_shuffled_arrays_resume_in_the_order_the_interrupted_epoch_drew(
    keras: Any, tmp_path: Path, shuffle: Any
) -> None:
    expected, _ = uninterrupted(keras, data_parallel, shuffle=shuffle)
    model, _ = interrupted_then_resumed(
        keras, tmp_path, data_parallel, crash_at=27, save_freq=6, shuffle=shuffle
    )
    assert_same_state(state(expected), state(model))


def test_a_shuffled_py_dataset_resumes_exactly(keras: Any, tmp_path: Path) -> None:
    x, y = data()

    class Batches(keras.utils.PyDataset):  # type: ignore[misc, name-defined]
        def __len__(self) -> int:
            return ROWS // BATCH

        def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
            return x[index * BATCH : (index + 1) * BATCH], y[index * BATCH : (index + 1) * BATCH]

    expected, _ = uninterrupted(keras, data_parallel, fit_data=Batches(), shuffle=True)
    model, _ = interrupted_then_resumed(
        keras, tmp_path, data_parallel, crash_at=21, save_freq=4, shuffle=True, fit_data=Batches()
    )
    assert_same_state(state(expected), state(model))


@pytest.mark.parametrize("which", ["kdist", "keras"])
def test_sharded_variables_come_back_on_their_devices(
    keras: Any, tmp_path: Path, which: str
) -> None:
    """kdist.ModelParallel and Keras's own ModelParallel, mesh (2, 4): each kernel in 4
    parts, each part on two devices."""
    distribution = model_parallel if which == "kdist" else lambda: keras_model_parallel(keras)
    expected, _ = uninterrupted(keras, distribution)
    model, _ = interrupted_then_resumed(keras, tmp_path, distribution, crash_at=19, save_freq=6)
    assert_same_state(state(expected), state(model))
    kernel = model.get_layer("dense_in").kernel.value
    assert tuple(kernel.sharding.spec) == (None, "model")
    assert {tuple(s.data.shape) for s in kernel.addressable_shards} == {(8, 4)}


def test_a_backup_s_arrays_are_an_orbax_checkpoint_of_global_arrays(
    keras: Any, tmp_path: Path
) -> None:
    """Each variable is one entry of the Orbax checkpoint in state/, with its global
    shape (a kernel split in 4 parts is whole there), beside kdist's manifest."""
    import orbax.checkpoint as ocp

    first = kdist.BackupAndRestore(tmp_path, save_freq=4)
    with pytest.raises(Crash):
        fit(build(keras, model_parallel), data(), [first, crash_after(keras, 5)])
    settled()
    backup = tmp_path / "step-000000004"
    assert sorted(p.name for p in backup.iterdir()) == ["host-00000.json", "manifest.json", "state"]
    manifest = json.loads((backup / "manifest.json").read_text())
    kernel = next(
        n for n, v in enumerate(manifest["variables"]) if v["path"].endswith("dense_in/kernel")
    )
    assert manifest["variables"][kernel]["layout"].startswith("PartitionSpec(None, 'model')")
    with ocp.StandardCheckpointer() as checkpointer:
        metadata = checkpointer.metadata(backup / "state")
    tree = getattr(metadata, "item_metadata", metadata)
    tree = dict(getattr(tree, "tree", tree))
    assert len(tree) == len(manifest["variables"])
    assert tuple(tree["trainable_00000"].shape) == (8, 16)  # whole, not a part of it


# --- atomic ------------------------------------------------------------------------------


def _listed(folder: Path) -> list[str]:
    """The backup folder's entries but the lease (kdist._resume.lease): a fit that crashed
    in this process, which lives on, still holds it, and a fit that runs holds it."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".kdist-lease.json")


def test_a_save_that_fails_before_its_commit_leaves_the_previous_backup(
    keras: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kdist._resume import store

    commit = store.commit
    calls = []

    def fail_on_the_second(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])
        if len(calls) == 2:
            raise Crash("killed before the commit")
        return commit(*args, **kwargs)

    monkeypatch.setattr(store, "commit", fail_on_the_second)
    expected, _ = uninterrupted(keras, data_parallel)
    with pytest.raises(Crash):
        fit(build(keras, data_parallel), data(), [kdist.BackupAndRestore(tmp_path, save_freq=5)])
    monkeypatch.setattr(store, "commit", commit)
    assert calls == [5, 10]
    assert _listed(tmp_path) == [
        "incoming-000000010",
        "latest.json",
        "step-000000005",
    ]
    model = build(keras, data_parallel, seed=SEED + 1)
    backup = kdist.BackupAndRestore(tmp_path, save_freq=5)
    seen: list[list[str]] = []

    class Listing(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            if epoch == 0:
                seen.append(_listed(tmp_path))

    settled()
    fit(model, data(), [backup, Listing()])
    assert backup.restored_step == 5
    assert seen == [["latest.json", "step-000000005"]]  # the leftover removed at the start
    assert_same_state(state(expected), state(model))


def test_double_checkpoint_falls_back_to_the_previous_backup(keras: Any, tmp_path: Path) -> None:
    first = kdist.BackupAndRestore(tmp_path, save_freq=4, double_checkpoint=True)
    with pytest.raises(Crash):
        fit(build(keras, data_parallel), data(), [first, crash_after(keras, 10)])
    settled()
    latest = json.loads((tmp_path / "latest.json").read_text())
    assert (latest["backup"], latest["previous"]) == ("step-000000008", "step-000000004")
    assert _listed(tmp_path) == [
        "latest.json",
        "step-000000004",
        "step-000000008",
    ]
    damaged = tmp_path / "step-000000008" / "state"
    shutil.rmtree(damaged)
    damaged.mkdir()  # Orbax's files gone
    backup = kdist.BackupAndRestore(tmp_path, save_freq=4, double_checkpoint=True)
    expected, _ = uninterrupted(keras, data_parallel)
    model = build(keras, data_parallel, seed=SEED + 1)
    fit(model, data(), [backup])
    assert backup.restored_step == 4
    assert_same_state(state(expected), state(model))


# --- a backup of another job or model is refused --------------------------------------------


def saved_backup(
    keras: Any, directory: Path, distribution: Callable[[], Any], units: int = 16
) -> Path:
    with pytest.raises(Crash):
        fit(
            build(keras, distribution, units=units),
            data(),
            [kdist.BackupAndRestore(directory, save_freq=4), crash_after(keras, 4)],
        )
    settled()
    return directory / "step-000000004"


def saved_arrays(backup: Path) -> dict[str, np.ndarray]:
    """The arrays of a backup, read with Orbax's own API onto this process's devices."""
    import orbax.checkpoint as ocp

    with ocp.StandardCheckpointer() as checkpointer:
        restored = checkpointer.restore(backup / "state")
    return {key: np.asarray(value) for key, value in restored.items()}


@pytest.mark.parametrize(
    "now",
    ["mesh (4, 2)", "DataParallel"],
)
def test_a_backup_of_another_layout_resumes_on_this_job_s_layout(
    keras: Any, tmp_path: Path, now: str
) -> None:
    """ModelParallel on a (2, 4) mesh, saved at step 4; resumed on a (4, 2) mesh or with
    DataParallel: every variable comes back with the saved values, laid out as this job
    lays it out, and training goes on to the end."""
    backup = saved_backup(keras, tmp_path, model_parallel)
    saved = saved_arrays(backup)
    distribution = (lambda: model_parallel((4, 2))) if now != "DataParallel" else data_parallel
    model = build(keras, distribution, seed=SEED + 1)
    restored: dict[str, np.ndarray] = {}

    class Restored(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        def on_train_begin(self, logs: Any = None) -> None:
            groups = (
                ("trainable", self.model.trainable_variables),
                ("non_trainable", self.model.non_trainable_variables),
                ("optimizer", self.model.optimizer.variables),
            )
            for group, variables in groups:
                for i, v in enumerate(variables):
                    restored[f"{group}_{i:05d}"] = np.asarray(v.value)

    backup_callback = kdist.BackupAndRestore(tmp_path, save_freq=4)
    fit(model, data(), [backup_callback, Restored()])
    assert backup_callback.restored_step == 4
    assert restored and all(np.array_equal(saved[k], v) for k, v in restored.items())
    assert int(np.asarray(model.optimizer.iterations.value)) == EPOCHS * ROWS // BATCH
    kernel = model.get_layer("dense_in").kernel.value
    if now == "DataParallel":
        assert kernel.sharding.is_fully_replicated
    else:
        assert dict(kernel.sharding.mesh.shape) == {"batch": 4, "model": 2}
        assert {tuple(s.data.shape) for s in kernel.addressable_shards} == {(8, 8)}


def test_a_backup_of_another_model_is_refused(keras: Any, tmp_path: Path) -> None:
    saved_backup(keras, tmp_path, data_parallel, units=16)
    with pytest.raises(
        kdist.BackupMismatchError,
        match=r"'sequential(_\d+)?/dense_in/kernel' \(trainable variable 0\) was saved as "
        r"float32\[8, 16\]; this model's .* is float32\[8, 32\]",
    ):
        fit(build(keras, data_parallel, units=32), data(), [kdist.BackupAndRestore(tmp_path)])


def test_a_backup_of_another_optimizer_is_refused_naming_the_counts(
    keras: Any, tmp_path: Path
) -> None:
    saved_backup(keras, tmp_path, data_parallel)
    model = build(keras, data_parallel)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    with pytest.raises(
        kdist.BackupMismatchError,
        match=r"\(step 4\) holds \d+ optimizer variables; this model has \d+\. The backup was "
        r"written for another model \(or optimizer, or metrics\)",
    ):
        fit(model, data(), [kdist.BackupAndRestore(tmp_path)])


# --- Keras's own, side by side ---------------------------------------------------------------


# Keras's own save calls np.array on a variable, which NumPy 2 warns about (Keras 3.15).
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")
def test_difference_keras_s_own_resumes_at_the_epoch_start_kdist_at_the_next_batch(
    keras: Any, tmp_path: Path
) -> None:
    """The same crash after batch 23 (epoch 1, batch 7) with a backup every 5 batches."""
    expected, _ = uninterrupted(keras, data_parallel)
    total = EPOCHS * ROWS // BATCH

    # Keras: the backup of batch 20 resumes at the start of epoch 1 (batch 16): batches
    # 16..19 are trained a second time, and the weights differ from the uninterrupted ones.
    theirs_dir = tmp_path / "keras"
    with pytest.raises(Crash):
        fit(
            build(keras, data_parallel),
            data(),
            [keras.callbacks.BackupAndRestore(theirs_dir, save_freq=5), crash_after(keras, 23)],
        )
    theirs = build(keras, data_parallel, seed=SEED + 1)
    fit(theirs, data(), [keras.callbacks.BackupAndRestore(theirs_dir, save_freq=5)])
    assert int(np.asarray(theirs.optimizer.iterations.value)) == total + 4  # 4 batches replayed
    assert not np.array_equal(state(expected)[0], state(theirs)[0])

    # kdist: resumes at batch 20 of the run (epoch 1, batch 4), nothing replayed.
    ours, _ = interrupted_then_resumed(
        keras, tmp_path / "kdist", data_parallel, crash_at=23, save_freq=5
    )
    assert int(np.asarray(ours.optimizer.iterations.value)) == total
    assert_same_state(state(expected), state(ours))


def test_a_fit_after_a_finished_one_starts_afresh(keras: Any, tmp_path: Path) -> None:
    backup = kdist.BackupAndRestore(tmp_path, save_freq=4)
    model = build(keras, data_parallel)
    fit(model, data(), [backup])
    assert model._initial_epoch is None and not tmp_path.exists()
    history = fit(model, data(), [backup])
    assert len(history.history["loss"]) == EPOCHS and backup.restored_step is None


def test_a_backup_directory_of_another_tool_is_not_read(keras: Any, tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(OSError, match=r"is not a kdist.BackupAndRestore file"):
        fit(build(keras, data_parallel), data(), [kdist.BackupAndRestore(tmp_path)])
    assert (tmp_path / "latest.json").is_file()  # not removed either


# --- kdist.load_backup --------------------------------------------------------------------------


def by_key(model: Any, groups: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The model's variables of `groups`, as a backup keys them ("trainable_00000")."""
    lists = {
        "trainable": model.trainable_variables,
        "non_trainable": model.non_trainable_variables,
        "optimizer": model.optimizer.variables,
    }
    return {
        f"{group}_{i:05d}": np.asarray(v.value)
        for group in groups
        for i, v in enumerate(lists[group])
    }


WEIGHTS = ("trainable", "non_trainable")


def test_load_backup_loads_weights_and_optimizer_onto_the_model_s_own_layout(
    keras: Any, tmp_path: Path
) -> None:
    """A backup of ModelParallel on a (2, 4) mesh, loaded into a DataParallel model with a
    built optimizer: every weight and optimizer variable as saved, laid out as this model
    lays it out; the metrics are left alone."""
    backup = saved_backup(keras, tmp_path, model_parallel)
    saved = saved_arrays(backup)
    model = build(keras, data_parallel, seed=SEED + 1)
    model.optimizer.build(model.trainable_variables)
    before = by_key(model, WEIGHTS)
    assert kdist.load_backup(model, tmp_path) == 4
    loaded = by_key(model, (*WEIGHTS, "optimizer"))
    assert any(not np.array_equal(before[k], loaded[k]) for k in before)  # it changed them
    for key, value in loaded.items():
        np.testing.assert_array_equal(value, saved[key], key)
    assert int(np.asarray(model.optimizer.iterations.value)) == 4
    kernel = model.get_layer("dense_in").kernel.value
    assert kernel.sharding.is_fully_replicated and len(kernel.sharding.device_set) == 8


def test_load_backup_with_an_unbuilt_optimizer_loads_the_weights_only(
    keras: Any, tmp_path: Path
) -> None:
    saved = saved_arrays(saved_backup(keras, tmp_path, data_parallel))
    model = build(keras, data_parallel, seed=SEED + 1)  # compiled; its optimizer unbuilt
    assert kdist.load_backup(model, str(tmp_path)) == 4
    for key, value in by_key(model, WEIGHTS).items():
        np.testing.assert_array_equal(value, saved[key], key)
    assert not model.optimizer.built  # nothing of the optimizer was made or loaded


def test_load_backup_refuses_a_backup_of_another_model_naming_the_variable(
    keras: Any, tmp_path: Path
) -> None:
    saved_backup(keras, tmp_path, data_parallel, units=16)
    model = build(keras, data_parallel, units=32)
    where = tmp_path / "step-000000004"
    with pytest.raises(
        kdist.BackupMismatchError,
        match=rf"^The backup in {where} \(step 4\): 'sequential(_\d+)?/dense_in/kernel' "
        r"\(trainable variable 0\) was saved as float32\[8, 16\]; this model's .* is "
        r"float32\[8, 32\]\. The backup was written for another model: load it into a model "
        r"built as the one that wrote it",
    ):
        kdist.load_backup(model, tmp_path)


def test_load_backup_refuses_another_optimizer_and_says_how_to_load_the_weights_only(
    keras: Any, tmp_path: Path
) -> None:
    saved_backup(keras, tmp_path, data_parallel)
    model = build(keras, data_parallel)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    model.optimizer.build(model.trainable_variables)
    with pytest.raises(
        kdist.BackupMismatchError,
        match=r"holds \d+ optimizer variables; this model has \d+\. .* or leave this model's "
        r"optimizer unbuilt to load the weights only\.$",
    ):
        kdist.load_backup(model, tmp_path)


@pytest.mark.parametrize(
    ("prepare", "found"),
    [
        (lambda root: None, "no such directory"),
        (lambda root: root.mkdir(), "an empty directory"),
        (
            lambda root: (root / "incoming-000000008" / "state").mkdir(parents=True),
            r"no latest\.json, only backups never committed \(incoming-000000008: a save that "
            r"was still being written when its job ended\)",
        ),
        (
            lambda root: root.mkdir() or (root / "notes.txt").write_text("x"),
            r"no latest\.json; it holds notes\.txt",
        ),
    ],
    ids=["missing", "empty", "never-committed", "something-else"],
)
def test_load_backup_without_a_committed_backup_says_what_it_found(
    keras: Any, tmp_path: Path, prepare: Callable[[Path], object], found: str
) -> None:
    root = tmp_path / "backup"
    prepare(root)
    model = build(keras, data_parallel)
    with pytest.raises(
        FileNotFoundError,
        match=rf"^kdist\.load_backup: expected a committed backup of kdist\.BackupAndRestore in "
        rf"{root} \(a latest\.json naming a step-\* folder beside it\); found {found}\. Give the "
        r"backup_dir the callback saved into",
    ):
        kdist.load_backup(model, root)


def test_load_backup_checks_its_arguments(keras: Any, tmp_path: Path) -> None:
    with pytest.raises(kdist.ArgumentTypeError, match=r"model must be a Keras model"):
        kdist.load_backup("model", tmp_path)
    with pytest.raises(kdist.ArgumentTypeError, match=r"backup_dir must be a directory path"):
        kdist.load_backup(build(keras, data_parallel), 7)
    unbuilt = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match=r"the model must be built before a backup is loaded"):
        kdist.load_backup(unbuilt, tmp_path)
