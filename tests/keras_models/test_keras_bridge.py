"""kdist's distributions driving Keras models, in this process (8 CPU devices).

The Keras bridge makes Keras's current distribution an equivalent Keras object whenever
kdist's changes; these tests build and train real Keras models (JAX backend) under it and
compare with keras.distribution's own classes. Multi-process training is in
test_keras_multiprocess.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kdist
from helpers.support import NEEDS_KERAS, clean_env, run_python

pytestmark = [pytest.mark.compat, NEEDS_KERAS]


@pytest.fixture
def keras(keras_on_jax: Any) -> Any:
    """Keras on JAX (conftest's keras_on_jax; kdist's distribution is cleared by jax_cpu)."""
    return keras_on_jax


def dense_model(keras: Any, seed: int) -> Any:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, name="hidden"), keras.layers.Dense(1, name="out")]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def training_data() -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-1.0, 1.0, 64 * 4, dtype="float32").reshape(64, 4)
    return x, x.sum(axis=1, keepdims=True)


def fit_losses(model: Any) -> list[float]:
    x, y = training_data()
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return [float(loss) for loss in history.history["loss"]]


def test_set_distribution_makes_keras_place_variables_by_kdist_layouts(keras: Any) -> None:
    ours = kdist.DataParallel()
    kdist.set_distribution(ours)
    theirs = keras.distribution.distribution()
    assert kdist.distribution() is ours
    assert isinstance(theirs, keras.distribution.DataParallel)
    assert theirs.kdist_distribution is ours
    assert theirs.batch_dim_name == "batch"
    assert theirs.num_model_replicas == 8
    layer = keras.layers.Dense(4)
    layer.build((None, 3))
    sharding = layer.kernel.value.sharding
    assert len(sharding.device_set) == 8
    assert sharding.mesh is ours.device_mesh.backend_mesh
    data_layout = theirs.get_data_layout((16, 4))
    assert isinstance(data_layout, keras.distribution.TensorLayout)
    assert data_layout.backend_layout == ours.get_data_layout((16, 4)).backend_layout


def test_fit_evaluate_predict_under_kdist_as_under_keras_s_own_data_parallel(
    keras: Any,
) -> None:
    x, y = training_data()

    def train_and_use(model: Any) -> tuple[list[float], float, np.ndarray]:
        losses = fit_losses(model)
        evaluated = float(model.evaluate(x, y, batch_size=16, verbose=0))
        return losses, evaluated, model.predict(x, batch_size=16, verbose=0)

    keras.distribution.set_distribution(keras.distribution.DataParallel())
    theirs = train_and_use(dense_model(keras, seed=3))
    keras.distribution.set_distribution(None)
    kdist.set_distribution(kdist.DataParallel())
    model = dense_model(keras, seed=3)
    ours = train_and_use(model)
    assert len(model.get_layer("hidden").kernel.value.sharding.device_set) == 8
    assert ours[0] == pytest.approx(theirs[0], rel=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-6)
    assert ours[2].shape == (64, 1)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


def test_scope_makes_keras_use_the_distribution_and_restores_keras_s_own(keras: Any) -> None:
    outer = keras.distribution.DataParallel()
    keras.distribution.set_distribution(outer)
    inner = kdist.DataParallel(devices=kdist.list_devices()[:4])
    with inner.scope():
        assert keras.distribution.distribution().kdist_distribution is inner
        layer = keras.layers.Dense(2)
        layer.build((None, 3))
    assert keras.distribution.distribution() is outer
    assert len(layer.kernel.value.sharding.device_set) == 4


def test_model_parallel_view_splits_kernels_as_the_layout_map_says(keras: Any) -> None:
    mesh = kdist.DeviceMesh((2, 4), ("batch", "model"))
    layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/hidden/kernel"] = (None, "model")
    layout_map[".*/out/kernel"] = (("batch", "model"), None)  # several mesh axes: kdist only
    strategy = kdist.ModelParallel(layout_map=layout_map)
    kdist.set_distribution(strategy)
    assert isinstance(keras.distribution.distribution(), keras.distribution.ModelParallel)
    model = dense_model(keras, seed=5)
    hidden = model.get_layer("hidden").kernel.value
    out = model.get_layer("out").kernel.value
    assert tuple(hidden.sharding.spec) == (None, "model")
    assert {shard.data.shape for shard in hidden.addressable_shards} == {(4, 2)}
    assert tuple(out.sharding.spec) == (("batch", "model"), None)
    assert {shard.data.shape for shard in out.addressable_shards} == {(1, 1)}
    assert all(np.isfinite(fit_losses(model)))


def test_keras_distributions_are_converted_and_keras_keeps_its_own_object(keras: Any) -> None:
    keras_mesh = keras.distribution.DeviceMesh((2, 4), ["batch", "model"])
    keras_map = keras.distribution.LayoutMap(keras_mesh)
    keras_map[".*kernel"] = (None, "model")
    theirs = keras.distribution.ModelParallel(layout_map=keras_map, auto_shard_dataset=False)
    kdist.set_distribution(theirs)
    ours = kdist.distribution()
    assert isinstance(ours, kdist.ModelParallel)
    assert keras.distribution.distribution() is theirs
    assert ours.device_mesh.shape == (2, 4)
    assert ours.device_mesh.devices.tolist() == np.asarray(keras_mesh.devices).tolist()
    assert ours.layout_map["dense/kernel"].axes == (None, "model")
    assert ours.auto_shard_dataset is False

    kdist.set_distribution(keras.distribution.DataParallel())
    assert isinstance(kdist.distribution(), kdist.DataParallel)
    assert kdist.distribution().num_model_replicas == 8


def test_a_keras_distribution_kdist_cannot_convert_is_refused_with_the_way_out(
    keras: Any,
) -> None:
    class Custom(keras.distribution.DataParallel.__mro__[1]):  # Keras's base Distribution
        pass

    custom = Custom(keras.distribution.DeviceMesh((8,), ["batch"]))
    with pytest.raises(kdist.ArgumentTypeError, match=r"keras\.distribution\.set_distribution"):
        kdist.set_distribution(custom)
    with pytest.raises(TypeError, match=r"expects a kdist\.Distribution"):
        kdist.set_distribution("DataParallel")  # type: ignore[arg-type]


def test_private_keras_api_the_bridge_relies_on_is_still_there(keras: Any) -> None:
    """Pins the two places without a public Keras API (see kdist/_keras/)."""
    from kdist._keras import seed as _keras_seed

    keras.utils.set_random_seed(11)
    assert _keras_seed.program_seed() == 11
    mesh = keras.distribution.DeviceMesh((8,), ["model"])
    layout_map = keras.distribution.LayoutMap(mesh)
    strategy = keras.distribution.ModelParallel(layout_map=layout_map)
    assert strategy._layout_map is layout_map
    base = next(c for c in keras.distribution.DataParallel.__mro__ if c.__name__ == "Distribution")
    assert issubclass(keras.distribution.ModelParallel, base)


def test_keras_imported_after_set_distribution_gets_it() -> None:
    code = (
        "import sys, kdist\n"
        "ours = kdist.DataParallel()\n"
        "kdist.set_distribution(ours)\n"
        "assert 'keras' not in sys.modules\n"
        "import keras\n"
        "assert keras.distribution.distribution().kdist_distribution is ours\n"
        "layer = keras.layers.Dense(2)\n"
        "layer.build((None, 3))\n"
        "print(len(layer.kernel.value.sharding.device_set))\n"
    )
    finished = run_python(code, env=clean_env(devices=2, KERAS_BACKEND="jax"), timeout=120)
    assert finished.returncode == 0, finished.describe()
    assert finished.stdout.split() == ["2"]


def test_initialize_leaves_keras_unimported_and_seeds_what_keras_draws_from() -> None:
    """Keras draws its default seeds from Python's random (and programs from NumPy's
    global generator): initialize() seeds both with the job seed, without Keras."""
    code = (
        "import random, sys, numpy, kdist\n"
        "kdist.initialize(num_processes=1)\n"
        "assert 'keras' not in sys.modules, 'initialize imported keras'\n"
        "spec = kdist.cluster_spec()\n"
        "drawn = (random.random(), numpy.random.random())\n"
        "random.seed(spec.seed)\n"
        "numpy.random.seed(spec.seed)\n"
        "assert drawn == (random.random(), numpy.random.random()), 'not seeded'\n"
        "print(spec.sources['seed'])\n"
    )
    finished = run_python(code, env=clean_env(devices=1), timeout=120)
    assert finished.returncode == 0, finished.describe()
    assert finished.stdout.strip() == "drawn by this process"


def test_initialize_keeps_the_program_s_own_keras_seed(keras: Any, kdist_reset: None) -> None:
    keras.utils.set_random_seed(1234)
    kdist.initialize(num_processes=1)
    spec = kdist.cluster_spec()
    assert spec is not None
    assert spec.seed == 1234
    assert spec.sources["seed"] == "keras.utils.set_random_seed (the program's own, kept)"


def test_initialize_seeds_keras_when_the_program_did_not(keras: Any, kdist_reset: None) -> None:
    from keras.src.utils import rng_utils

    keras.utils.set_random_seed(1)  # then forget it, as a fresh program would have none
    from keras.src.backend.common import global_state

    global_state.set_global_attribute(rng_utils.GLOBAL_RANDOM_SEED, None)
    kdist.initialize(num_processes=1)
    spec = kdist.cluster_spec()
    assert spec is not None and spec.seed is not None
    assert rng_utils.get_random_seed() == spec.seed
    assert 0 <= spec.seed < 2**32
    # The seed kdist gave Keras is not mistaken for the program's own the next time.
    kdist.shutdown()
    kdist.initialize(num_processes=1)
    again = kdist.cluster_spec()
    assert again is not None
    assert again.sources["seed"] == "drawn by this process"


def test_argument_type_errors_are_value_errors_too() -> None:
    assert issubclass(kdist.ArgumentTypeError, TypeError)
    assert issubclass(kdist.ArgumentTypeError, ValueError)
    assert issubclass(kdist.ArgumentTypeError, kdist.KdistError)
    with pytest.raises(ValueError, match=r"device_mesh must be a kdist\.DeviceMesh"):
        kdist.DataParallel(device_mesh=(8,))  # type: ignore[arg-type]


# --- Keras code takes kdist's mesh; kdist takes Keras's meshes and layout maps -------------


def test_a_kdist_mesh_made_with_keras_loaded_is_a_keras_mesh(keras: Any) -> None:
    mesh = kdist.DeviceMesh((2, 4), ("batch", "model"))
    assert isinstance(mesh, keras.distribution.DeviceMesh)
    assert isinstance(mesh, kdist.DeviceMesh)
    assert type(mesh).__name__ == "DeviceMesh"
    assert type(kdist.DeviceMesh((8,), ["x"])) is type(mesh)  # the class is made once
    # Keras's own types take it, and place variables on the very same JAX mesh.
    keras_map = keras.distribution.LayoutMap(mesh)
    keras_map[".*kernel"] = (None, "model")
    keras.distribution.set_distribution(keras.distribution.ModelParallel(layout_map=keras_map))
    layer = keras.layers.Dense(8)
    layer.build((None, 4))
    assert layer.kernel.value.sharding.mesh is mesh.backend_mesh
    assert tuple(layer.kernel.value.sharding.spec) == (None, "model")
    # kdist's own distributions hand Keras the mesh itself, not a view of it.
    keras.distribution.set_distribution(None)
    kdist.set_distribution(kdist.DataParallel(device_mesh=kdist.DeviceMesh((8,), ["batch"])))
    assert keras.distribution.distribution().device_mesh is kdist.distribution().device_mesh


def test_a_keras_readable_mesh_pickles_and_copies(keras: Any) -> None:
    import copy
    import pickle

    mesh = kdist.DeviceMesh((2, 4), ("batch", "model"))
    for again in (pickle.loads(pickle.dumps(mesh)), copy.deepcopy(mesh)):
        assert isinstance(again, keras.distribution.DeviceMesh)
        assert again.devices.tolist() == mesh.devices.tolist()
        assert again.backend_mesh == mesh.backend_mesh


def test_a_keras_layout_map_goes_into_kdist_model_parallel(keras: Any) -> None:
    mesh = kdist.DeviceMesh((2, 4), ("batch", "model"))
    keras_map = keras.distribution.LayoutMap(mesh)
    keras_map[".*hidden/kernel"] = (None, "model")
    keras_map[".*hidden/bias"] = keras.distribution.TensorLayout(("model",))
    strategy = kdist.ModelParallel(layout_map=keras_map, batch_dim_name="batch")
    assert strategy.device_mesh is mesh
    assert isinstance(strategy.layout_map, kdist.LayoutMap)
    assert list(strategy.layout_map) == list(keras_map)
    assert strategy.layout_map["seq/hidden/kernel"].axes == (None, "model")
    assert strategy.layout_map["seq/hidden/bias"].axes == ("model",)
    assert kdist.ModelParallel(layout_map=keras_map, device_mesh=mesh).device_mesh is mesh
    kdist.set_distribution(strategy)
    hidden = dense_model(keras, seed=5).get_layer("hidden")
    assert tuple(hidden.kernel.value.sharding.spec) == (None, "model")
    assert tuple(hidden.bias.value.sharding.spec) == ("model",)


def test_keras_meshes_convert_through_one_path_to_one_kdist_mesh(keras: Any) -> None:
    """LayoutMap, TensorLayout, DataParallel, ModelParallel and set_distribution convert
    a Keras mesh alike: to one kdist mesh per Keras mesh."""
    keras_mesh = keras.distribution.DeviceMesh((2, 4), ["batch", "model"])
    layout_map = kdist.LayoutMap(keras_mesh)
    ours = layout_map.device_mesh
    assert isinstance(ours, kdist.DeviceMesh)
    assert (ours.shape, ours.axis_names) == ((2, 4), ("batch", "model"))
    assert ours.devices.tolist() == np.asarray(keras_mesh.devices).tolist()
    assert kdist.LayoutMap(keras_mesh).device_mesh is ours
    assert kdist.TensorLayout((None, "model"), keras_mesh).device_mesh is ours
    with pytest.warns(UserWarning, match="expects a 1-D device mesh"):
        assert kdist.DataParallel(device_mesh=keras_mesh).device_mesh is ours
    keras_map = keras.distribution.LayoutMap(keras_mesh)
    keras_map["dense/kernel"] = (None, "model")
    assert kdist.ModelParallel(layout_map=keras_map).device_mesh is ours
    kdist.set_distribution(keras.distribution.ModelParallel(layout_map=keras_map))
    assert kdist.distribution().device_mesh is ours


def test_a_keras_mesh_kdist_cannot_convert_is_refused_with_kdist_s_reasons(keras: Any) -> None:
    missing = keras.distribution.DeviceMesh((2,), ["batch"], ["cpu:0", "cpu:99"])
    with pytest.raises(
        ValueError,
        match=r"^LayoutMap: the Keras DeviceMesh .* converts to no kdist DeviceMesh: Device not "
        r"found: cpu:99\.",
    ):
        kdist.LayoutMap(missing)
    with pytest.raises(ValueError, match=r"^DataParallel: the Keras DeviceMesh .* cpu:99"):
        kdist.DataParallel(device_mesh=missing)
    with pytest.raises(
        kdist.ArgumentTypeError,
        match=r"^ModelParallel \(the Keras LayoutMap's mesh\): device_mesh must be a kdist\."
        r"DeviceMesh or a keras\.distribution\.DeviceMesh\. Received: device_mesh=None",
    ):
        kdist.ModelParallel(layout_map=keras.distribution.LayoutMap(None))
    with pytest.raises(kdist.ArgumentTypeError, match=r"^LayoutMap: device_mesh must be a"):
        kdist.LayoutMap("mesh")


def test_a_mesh_made_before_keras_was_imported_says_why_keras_refuses_it() -> None:
    code = (
        "import kdist\n"
        "early = kdist.DeviceMesh((2,), ['batch'])\n"
        "import keras\n"
        "assert not isinstance(early, keras.distribution.DeviceMesh)\n"
        "print(type(early))\n"  # what KerasHub's "Invalid device_mesh type" message prints
        "print(repr(early))\n"
        "assert kdist.LayoutMap(early).device_mesh is early  # kdist's own types take it\n"
        "late = kdist.DeviceMesh((2,), ['batch'])\n"
        "assert isinstance(late, keras.distribution.DeviceMesh)\n"
        "print(repr(late))\n"
    )
    finished = run_python(code, env=clean_env(devices=2, KERAS_BACKEND="jax"), timeout=120)
    assert finished.returncode == 0, finished.describe()
    early_class, early, late = finished.stdout.splitlines()[-3:]
    why = (
        "made before Keras was imported, so Keras code does not take it as a "
        "keras.distribution.DeviceMesh: make the kdist.DeviceMesh after importing keras"
    )
    assert early_class.startswith("<class 'kdist.DeviceMesh' (")
    assert why in early_class
    assert early == f"<DeviceMesh shape=(2,), axis_names=('batch',), {why}>"
    assert late == "<DeviceMesh shape=(2,), axis_names=('batch',)>"


def test_without_keras_a_mesh_is_plain_and_kdist_imports_no_keras() -> None:
    code = (
        "import sys, kdist\n"
        "mesh = kdist.DeviceMesh((2,), ['batch'])\n"
        "print(type(mesh) is kdist.DeviceMesh, repr(type(mesh)), 'keras' in sys.modules)\n"
    )
    finished = run_python(code, env=clean_env(devices=2), timeout=120)
    assert finished.returncode == 0, finished.describe()
    assert finished.stdout.split() == [
        "True",
        "<class",
        "'kdist.DeviceMesh'>",
        "False",
    ]
