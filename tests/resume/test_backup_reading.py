"""A backup read elsewhere: by `kdist.load_backup` in a fresh program of another shape,
without `kdist.initialize()`, and by docs/resume.md's example that reads it with Orbax
alone, run as written.

The backup: `kdist.BackupAndRestore` in this process (8 CPU devices, `kdist.ModelParallel`
on a (2, 4) mesh: each kernel in 4 parts), one epoch of 16 batches, a save every 4, kept
(delete_checkpoint=False): its latest backup holds the trained model's final state. Each
reader is a fresh interpreter on 1 CPU device.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import kdist
from helpers.support import NEEDS_KERAS, NEEDS_ORBAX, REPOSITORY, clean_env, run_python

pytestmark = [NEEDS_KERAS, NEEDS_ORBAX]

PAGE = REPOSITORY / "docs" / "resume.md"
STEPS = 16
MODEL = """
model = keras.Sequential(
    [
        keras.Input((8,)),
        keras.layers.Dense(16, activation="relu", name="dense_in"),
        keras.layers.Dropout(0.25),
        keras.layers.Dense(4, name="dense_out"),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
"""


def trained(keras: Any, backup_dir: Path) -> Any:
    """The model trained with the callback, sharded on a (2, 4) mesh; its backup kept."""
    mesh = kdist.DeviceMesh((2, 4), ("batch", "model"))
    layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/dense_in/kernel"] = (None, "model")
    layout_map[".*/dense_out/kernel"] = ("model", None)
    kdist.set_distribution(kdist.ModelParallel(layout_map=layout_map))
    keras.utils.set_random_seed(99)
    scope: dict[str, Any] = {"keras": keras}
    exec(MODEL, scope)
    model = scope["model"]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * 8, 8)).astype("float32")
    y = rng.normal(size=(STEPS * 8, 4)).astype("float32")
    backup = kdist.BackupAndRestore(backup_dir, save_freq=4, delete_checkpoint=False)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[backup])
    assert json.loads((backup_dir / "latest.json").read_text())["backup"] == "step-000000016"
    return model


def test_load_backup_in_a_fresh_program_on_one_device_without_initialize(
    keras_on_jax: Any, tmp_path: Path
) -> None:
    """The weights and the optimizer's variables (its optimizer built) come back as saved
    by the 8-device ModelParallel job, on the one device of a program that never called
    kdist.initialize()."""
    backup_dir = tmp_path / "backup"
    model = trained(keras_on_jax, backup_dir)
    code = (
        "import json, keras, kdist, jax\nimport numpy as np\n"
        + MODEL
        + "model.optimizer.build(model.trainable_variables)\n"
        f"step = kdist.load_backup(model, {str(backup_dir)!r})\n"
        "weights = [*model.trainable_variables, *model.non_trainable_variables]\n"
        "groups = {'weights': weights, 'optimizer': model.optimizer.variables}\n"
        "print(json.dumps({'step': step, 'initialized': kdist.is_initialized(), "
        "'devices': len(jax.devices()), 'values': {name: [np.asarray(v.value).tolist() "
        "for v in variables] for name, variables in groups.items()}}))\n"
    )
    env = clean_env(1, KERAS_BACKEND="jax", KERAS_HOME=str(tmp_path / "keras_home"))
    result = run_python(code, env=env, timeout=180)
    assert result.returncode == 0, result.describe()
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert (loaded["step"], loaded["initialized"], loaded["devices"]) == (STEPS, False, 1)
    weights = weights_of(model)
    for name, variables in (("weights", weights), ("optimizer", model.optimizer.variables)):
        assert len(loaded["values"][name]) == len(variables), name
        for variable, values in zip(variables, loaded["values"][name], strict=True):
            expected = np.asarray(variable.value)
            np.testing.assert_array_equal(
                np.array(values, dtype=expected.dtype), expected, variable.path
            )


def weights_of(model: Any) -> list[Any]:
    """The trainable and non-trainable variables (Dropout's seed generator among the
    latter, which `model.weights` leaves out)."""
    return [*model.trainable_variables, *model.non_trainable_variables]


def orbax_example() -> str:
    """The page's Python block that reads a backup with Orbax alone."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    found = [block for block in blocks if "import orbax.checkpoint as ocp" in block]
    assert len(found) == 1, f"{PAGE}: {len(found)} blocks import orbax.checkpoint"
    return found[0]


def test_the_page_s_plain_orbax_example_reads_a_backup_as_written(
    keras_on_jax: Any, tmp_path: Path
) -> None:
    """The example, as the page writes it, in a fresh interpreter on 1 CPU device beside
    a copy of the backup in run-42/backup: its weights.npz holds every weight of the
    trained model, whole, bit for bit; and it needs no kdist."""
    example = orbax_example()
    assert "kdist" not in example
    model = trained(keras_on_jax, tmp_path / "backup")
    shutil.copytree(tmp_path / "backup", tmp_path / "run-42" / "backup")
    # The program imports nothing of kdist's, and fails if anything does.
    guard = "import sys\nsys.modules['kdist'] = None\n"
    result = subprocess.run(
        [sys.executable, "-c", guard + example],
        cwd=tmp_path,
        env=clean_env(1),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    weights = weights_of(model)
    assert len(weights) == 5
    assert result.stdout.strip().splitlines()[-1] == (
        f"step-{STEPS:09d}: step {STEPS}, {len(weights)} weights"
    )
    with np.load(tmp_path / "weights.npz") as exported:
        assert sorted(exported.files) == sorted(v.path for v in weights)
        for variable in weights:
            np.testing.assert_array_equal(
                exported[variable.path], np.asarray(variable.value), variable.path
            )
