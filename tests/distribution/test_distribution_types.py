"""Distribution, DataParallel, ModelParallel, distribute_tensor and distribute_batch in one
process with 8 CPU devices (the meshes, layouts and layout maps they use: test_layouts.py)."""

from __future__ import annotations

import threading
import types
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import kdist
from helpers.support import run_python

# Part of the fast subset the test command also runs at the oldest supported JAX and Keras.
pytestmark = pytest.mark.compat


@dataclass
class Var:
    """What a distribution reads from a model variable (a keras.Variable has these)."""

    shape: tuple[int, ...]
    path: str = "model/dense/kernel"
    _layout: Any = None


@pytest.fixture
def fake_job(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Pretends kdist was initialized as process `process_id` of `num_processes` (the spec
    is all a Distribution reads; the devices stay this process's 8)."""

    def pretend(num_processes: int, process_id: int) -> None:
        spec = types.SimpleNamespace(
            num_processes=num_processes, process_id=process_id, coordinator_address=None
        )
        monkeypatch.setattr("kdist._state.active_spec", lambda: spec)

    return pretend


# --- import cost ---------------------------------------------------------------------------


def test_public_names_and_layouts_without_a_mesh_import_neither_jax_nor_numpy() -> None:
    result = run_python(
        "import sys, kdist\n"
        "names = [kdist.DeviceMesh, kdist.TensorLayout, kdist.Distribution, kdist.DataParallel,"
        " kdist.ModelParallel, kdist.LayoutMap, kdist.distribute_tensor, kdist.distribute_batch]\n"
        "after_names = 'jax' in sys.modules\n"
        "layout = kdist.TensorLayout(('batch', None))\n"
        "assert layout.device_mesh is None\n"
        "kdist.set_distribution(None)\n"
        "print(after_names, 'jax' in sys.modules, 'numpy' in sys.modules, sep=',')\n"
    )
    assert result.returncode == 0, result.describe()
    assert result.stdout.strip() == "False,False,False"


def test_public_names_are_registered() -> None:
    for name in (
        "DeviceMesh",
        "TensorLayout",
        "Distribution",
        "DataParallel",
        "ModelParallel",
        "LayoutMap",
        "distribute_tensor",
        "distribute_batch",
    ):
        assert name in kdist.__all__
        assert name in dir(kdist)
        value = getattr(kdist, name)
        # Classes are named as users import them; functions keep their wing's module.
        expected = "kdist" if isinstance(value, type) else "kdist._"
        assert value.__module__.startswith(expected), (name, value.__module__)


# --- Distribution (base class) -------------------------------------------------------------


class Replicated(kdist.Distribution):
    """The smallest useful subclass: one replica, everything replicated."""

    @property
    def num_model_replicas(self) -> int:
        return 1


def test_distribution_reads_processes_from_jax_when_kdist_is_not_initialized(
    mesh_2x4: kdist.DeviceMesh,
) -> None:
    dist = Replicated(mesh_2x4, "batch")
    assert (dist.num_processes, dist.process_id) == (1, 0)
    assert (dist.num_data_shards, dist.data_shard_id) == (1, 0)


def test_distribution_reads_processes_from_kdist_spec_when_initialized(
    mesh_2x4: kdist.DeviceMesh,
) -> None:
    kdist.initialize(num_processes=1)
    spec = kdist.cluster_spec()
    assert spec is not None
    dist = Replicated(mesh_2x4)
    assert (dist.num_processes, dist.process_id) == (spec.num_processes, spec.process_id)


def test_distribution_prefers_kdist_spec_over_jax(
    mesh_2x4: kdist.DeviceMesh, fake_job: Any
) -> None:
    fake_job(4, 3)
    dist = Replicated(mesh_2x4)
    assert (dist.num_processes, dist.process_id) == (4, 3)
    assert (dist.num_data_shards, dist.data_shard_id) == (1, 0)


def test_distribution_validates_its_arguments(mesh_2x4: kdist.DeviceMesh) -> None:
    with pytest.raises(TypeError, match=r"Replicated: device_mesh must be a kdist.DeviceMesh"):
        Replicated("mesh")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError,
        match=r"batch_dim_name must be one of the mesh's axis names \['batch', 'model'\]\. "
        r"Received: batch_dim_name='data'",
    ):
        Replicated(mesh_2x4, "data")
    with pytest.raises(TypeError, match=r"batch_dim_name must be a string .* of type int"):
        Replicated(mesh_2x4, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"auto_shard_dataset must be True or False\. .*'yes'"):
        Replicated(mesh_2x4, auto_shard_dataset="yes")  # type: ignore[arg-type]
    dist = Replicated(mesh_2x4, auto_shard_dataset=False)
    assert dist.auto_shard_dataset is False
    dist.auto_shard_dataset = True
    assert dist.auto_shard_dataset is True
    with pytest.raises(TypeError, match=r"auto_shard_dataset must be True or False"):
        dist.auto_shard_dataset = 1  # type: ignore[assignment]


def test_distribution_base_methods_are_abstract(mesh_2x4: kdist.DeviceMesh) -> None:
    dist = kdist.Distribution(mesh_2x4)
    assert dist.device_mesh is mesh_2x4 and dist.batch_dim_name is None
    with pytest.raises(NotImplementedError, match="num_model_replicas"):
        _ = dist.num_model_replicas
    with pytest.raises(NotImplementedError, match="get_data_layout"):
        dist.get_data_layout((8,))
    with pytest.raises(NotImplementedError, match="get_variable_layout"):
        dist.get_variable_layout(Var((2,)))
    with pytest.raises(NotImplementedError, match="get_tensor_layout"):
        dist.get_tensor_layout("x")
    assert repr(dist).startswith("<Distribution device_mesh=<DeviceMesh shape=(2, 4)")


def test_scope_nests_restores_and_is_per_thread(mesh_2x4: kdist.DeviceMesh) -> None:
    outer, inner, process_wide = Replicated(mesh_2x4), Replicated(mesh_2x4), Replicated(mesh_2x4)
    kdist.set_distribution(process_wide)
    seen_by_other_thread: list[object] = []
    with outer.scope() as entered:
        assert entered is outer
        assert kdist.distribution() is outer
        with pytest.raises(RuntimeError, match="boom"), inner.scope():
            assert kdist.distribution() is inner
            thread = threading.Thread(
                target=lambda: seen_by_other_thread.append(kdist.distribution())
            )
            thread.start()
            thread.join(timeout=30)
            raise RuntimeError("boom")
        assert kdist.distribution() is outer
    assert kdist.distribution() is process_wide
    assert seen_by_other_thread == [process_wide]


# --- DataParallel --------------------------------------------------------------------------


def test_data_parallel_defaults_to_every_device(jax_cpu: Any) -> None:
    dist = kdist.DataParallel()
    assert dist.device_mesh.shape == (8,)
    assert dist.device_mesh.axis_names == ("batch",)
    assert dist.device_mesh.devices.tolist() == kdist.list_devices()
    assert dist.batch_dim_name == "batch"
    assert dist.num_model_replicas == 8
    assert (dist.num_data_shards, dist.data_shard_id) == (1, 0)
    assert dist.auto_shard_dataset is True
    assert dist.get_tensor_layout("anything") is None


def test_data_parallel_from_devices(jax_cpu: Any) -> None:
    dist = kdist.DataParallel(
        devices=["cpu:2", "cpu:3", "cpu:4", "cpu:5"], auto_shard_dataset=False
    )
    assert dist.device_mesh.shape == (4,)
    assert dist.device_mesh.devices.tolist() == ["cpu:2", "cpu:3", "cpu:4", "cpu:5"]
    assert dist.auto_shard_dataset is False
    assert dist.num_model_replicas == 4
    # A numpy array (Keras fails on its truth value) and a nested list become a 1-D mesh.
    from_array = kdist.DataParallel(devices=np.array(jax_cpu.devices()[:4]).reshape(2, 2))
    assert from_array.device_mesh.shape == (4,)
    nested = kdist.DataParallel(devices=[["cpu:0", "cpu:1"], ["cpu:2", "cpu:3"]])
    assert nested.device_mesh.devices.tolist() == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    with pytest.raises(ValueError, match=r"devices must not be empty.*Received: devices=\[\]"):
        kdist.DataParallel(devices=[])
    with pytest.raises(TypeError, match=r"DataParallel: devices must be a sequence"):
        kdist.DataParallel(devices="cpu:0")


def test_data_parallel_from_a_mesh(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh((8,), ["data"])
    dist = kdist.DataParallel(device_mesh=mesh)
    assert dist.device_mesh is mesh and dist.batch_dim_name == "data"
    with pytest.raises(
        TypeError, match=r"device_mesh must be a kdist.DeviceMesh or a keras\S* \(or None\)"
    ):
        kdist.DataParallel(device_mesh=(8,))  # type: ignore[arg-type]


def test_data_parallel_mesh_takes_precedence_over_devices_with_a_warning(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh((2,), ["data"], devices=["cpu:6", "cpu:7"])
    with pytest.warns(UserWarning, match=r"both device_mesh and devices were given; devices is"):
        dist = kdist.DataParallel(device_mesh=mesh, devices=["cpu:0"])
    assert dist.device_mesh is mesh


def test_data_parallel_warns_on_a_mesh_of_several_dimensions(mesh_2x4: kdist.DeviceMesh) -> None:
    with pytest.warns(
        UserWarning,
        match=r"expects a 1-D device mesh, but received one with 2 "
        r"dimensions \(shape=\(2, 4\).*first axis, 'batch'",
    ) as record:
        dist = kdist.DataParallel(device_mesh=mesh_2x4)
    assert record[0].filename == __file__
    assert dist.batch_dim_name == "batch"
    assert dist.num_model_replicas == 2
    layout = dist.get_data_layout((16, 3))
    assert layout.axes == ("batch", None)


def test_data_parallel_layouts(jax_cpu: Any) -> None:
    dist = kdist.DataParallel()
    data = dist.get_data_layout([64, 28, 28])
    assert data.axes == ("batch", None, None)
    assert data.device_mesh is dist.device_mesh
    replicated = dist.get_variable_layout(Var((3, 5)))
    assert replicated.axes == (None, None)
    assert replicated.device_mesh is dist.device_mesh
    own = kdist.TensorLayout((None, "batch"), dist.device_mesh)
    assert dist.get_variable_layout(Var((3, 8), _layout=own)) is own
    with pytest.raises(ValueError, match=r"needs a first \(batch\) dimension.*data_shape=\(\)"):
        dist.get_data_layout(())
    with pytest.raises(TypeError, match=r"data_shape must be a sequence .* data_shape=64"):
        dist.get_data_layout(64)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"expected a variable with a shape .* of type str"):
        dist.get_variable_layout("kernel")


def test_set_distribution_accepts_the_new_types(jax_cpu: Any) -> None:
    dist = kdist.DataParallel()
    kdist.set_distribution(dist)
    assert kdist.distribution() is dist


# --- ModelParallel -------------------------------------------------------------------------


def test_model_parallel_takes_mesh_and_batch_axis_from_the_layout_map(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    dist = kdist.ModelParallel(layout_map=layout_map)
    assert dist.device_mesh is mesh_2x4
    assert dist.layout_map is layout_map
    assert dist.batch_dim_name == "batch"
    assert dist.num_model_replicas == 2
    assert dist.get_data_layout((16, 5)).axes == ("batch", None)
    by_model = kdist.ModelParallel(layout_map=layout_map, batch_dim_name="model")
    assert by_model.num_model_replicas == 4
    assert by_model.get_data_layout((16,)).axes == ("model",)
    same_mesh = kdist.ModelParallel(layout_map=layout_map, device_mesh=mesh_2x4)
    assert same_mesh.device_mesh is mesh_2x4


def test_model_parallel_variable_and_tensor_layouts(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    dist = kdist.ModelParallel(layout_map=layout_map)
    kernel = dist.get_variable_layout(Var((4, 8), "model/dense_1/kernel"))
    assert kernel is layout_map[".*dense.*kernel"]
    assert kernel.axes == (None, "model") and kernel.device_mesh is mesh_2x4
    other = dist.get_variable_layout(Var((3, 3, 2), "model/embedding/embeddings"))
    assert other.axes == (None, None, None) and other.device_mesh is mesh_2x4
    own = kdist.TensorLayout(("model", None), mesh_2x4)
    assert dist.get_variable_layout(Var((8, 4), "model/dense_1/kernel", own)) is own
    assert dist.get_tensor_layout("x/conv2d_3/kernel") is layout_map[".*conv2d.*kernel"]
    assert dist.get_tensor_layout("x/conv3d/kernel") is None
    layout_map["model/.*"] = ("batch",)
    with pytest.raises(
        ValueError, match=r"^Path 'model/dense_1/bias' matches multiple layout specification keys"
    ):
        dist.get_variable_layout(Var((8,), "model/dense_1/bias"))
    with pytest.raises(TypeError, match=r"expected a variable with a string path"):
        dist.get_variable_layout(np.zeros((2, 2)))


def test_model_parallel_validates_its_arguments(mesh_2x4: kdist.DeviceMesh) -> None:
    layout_map = kdist.LayoutMap(mesh_2x4)
    with pytest.raises(
        ValueError, match=r"^You must specify a layout_map argument\. ModelParallel: "
    ):
        kdist.ModelParallel()
    with pytest.raises(
        TypeError, match=r"^Argument `layout_map` must be a `LayoutMap` instance\. .* Received: "
    ):
        kdist.ModelParallel(layout_map={".*": (None,)})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="positional"):
        kdist.ModelParallel(layout_map)  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"batch_dim_name must be one of the mesh's axis names"):
        kdist.ModelParallel(layout_map=layout_map, batch_dim_name="data")
    other = kdist.DeviceMesh((2, 4), ["batch", "model"])
    with pytest.raises(ValueError, match=r"device_mesh, when given, must be that same mesh"):
        kdist.ModelParallel(layout_map=layout_map, device_mesh=other)


def test_model_parallel_data_shards_across_processes(jax_cpu: Any, fake_job: Any) -> None:
    mesh = kdist.DeviceMesh((2, 4), ["batch", "model"])
    fake_job(4, 3)
    dist = kdist.ModelParallel(layout_map=kdist.LayoutMap(mesh))
    # 2 replicas over 4 processes: processes 0-1 read shard 0, processes 2-3 shard 1.
    assert (dist.num_processes, dist.num_model_replicas) == (4, 2)
    assert (dist.num_data_shards, dist.data_shard_id) == (2, 1)
    fake_job(2, 1)
    wide = kdist.ModelParallel(layout_map=kdist.LayoutMap(mesh), batch_dim_name="model")
    assert (wide.num_data_shards, wide.data_shard_id) == (2, 1)


def test_model_parallel_needs_processes_divisible_by_replicas(jax_cpu: Any, fake_job: Any) -> None:
    mesh = kdist.DeviceMesh((3, 2), ["batch", "model"], devices=kdist.list_devices()[:6])
    fake_job(4, 0)
    with pytest.raises(
        ValueError,
        match=r"^If `num_processes` is greater than `num_model_replicas`, `num_processes` must be "
        r"divisible by `num_model_replicas`\. .* Got num_processes=4, "
        r"num_model_replicas=3 \(the size of the mesh axis 'batch'\)",
    ):
        kdist.ModelParallel(layout_map=kdist.LayoutMap(mesh))
    fake_job(2, 0)  # fewer processes than replicas: no constraint
    assert kdist.ModelParallel(layout_map=kdist.LayoutMap(mesh)).data_shard_id == 0


# --- distribute_tensor ---------------------------------------------------------------------


def test_distribute_tensor_eagerly(mesh_2x4: kdist.DeviceMesh) -> None:
    import jax

    layout = kdist.TensorLayout(("batch", "model"), mesh_2x4)
    value = np.arange(32.0).reshape(4, 8)
    array = kdist.distribute_tensor(value, layout)
    assert isinstance(array, jax.Array)
    assert array.sharding.is_equivalent_to(layout.backend_layout, 2)
    np.testing.assert_array_equal(np.asarray(array), value)
    shard_shapes = {shard.data.shape for shard in array.addressable_shards}
    assert shard_shapes == {(2, 2)}
    # Already laid out this way: the very same array comes back.
    assert kdist.distribute_tensor(array, layout) is array
    assert kdist.distribute_tensor(array, layout.backend_layout) is array
    # Laid out otherwise: moved.
    by_rows = kdist.TensorLayout(("model", None), mesh_2x4)
    moved = kdist.distribute_tensor(array, by_rows)
    assert moved is not array
    assert moved.sharding.is_equivalent_to(by_rows.backend_layout, 2)
    np.testing.assert_array_equal(np.asarray(moved), value)


def test_distribute_tensor_inside_jit_constrains_the_sharding(mesh_2x4: kdist.DeviceMesh) -> None:
    import jax

    layout = kdist.TensorLayout(("model", None), mesh_2x4)
    replicated = kdist.TensorLayout((None, None), mesh_2x4)
    value = kdist.distribute_tensor(np.ones((8, 2)), replicated)

    @jax.jit
    def double(x: Any) -> Any:
        return kdist.distribute_tensor(x * 2, layout)

    unconstrained = jax.jit(lambda x: x * 2)(value)
    assert not unconstrained.sharding.is_equivalent_to(layout.backend_layout, 2)
    result = double(value)
    assert result.sharding.is_equivalent_to(layout.backend_layout, 2)
    np.testing.assert_array_equal(np.asarray(result), np.full((8, 2), 2.0))


def test_distribute_tensor_rejects_other_layouts(mesh_2x4: kdist.DeviceMesh) -> None:
    with pytest.raises(
        TypeError,
        match=r"distribute_tensor: expected a kdist.TensorLayout, a keras.distribution."
        r"TensorLayout, a jax.sharding.Sharding or a jax.experimental.layout.Format\. "
        r"Received: \('batch',\) of type tuple",
    ):
        kdist.distribute_tensor(np.ones(8), ("batch",))
    with pytest.raises(ValueError, match="device mesh is not set"):
        kdist.distribute_tensor(np.ones(8), kdist.TensorLayout(("batch",)))


# --- distribute_batch (one process; see test_distribute_batch_multiprocess.py) ---------------


def test_distribute_batch_with_a_distribution(jax_cpu: Any) -> None:
    dist = kdist.DataParallel()
    local = {"x": np.arange(48.0).reshape(16, 3), "y": np.arange(16)}
    batch = kdist.distribute_batch(local, dist)
    assert set(batch) == {"x", "y"}
    for name in ("x", "y"):
        np.testing.assert_array_equal(np.asarray(batch[name]), local[name])
        assert len(batch[name].addressable_shards) == 8
        assert {s.data.shape[0] for s in batch[name].addressable_shards} == {2}
    assert tuple(batch["x"].sharding.spec) == ("batch", None)
    assert tuple(batch["y"].sharding.spec) == ("batch",)


def test_distribute_batch_with_a_layout_a_sharding_or_the_current_distribution(
    mesh_2x4: kdist.DeviceMesh,
) -> None:
    layout = kdist.TensorLayout(("batch", None), mesh_2x4)
    local = np.arange(8.0).reshape(4, 2)
    for target in (layout, layout.backend_layout):
        batch = kdist.distribute_batch(local, target)
        assert batch.sharding.is_equivalent_to(layout.backend_layout, 2)
        np.testing.assert_array_equal(np.asarray(batch), local)
    with pytest.raises(ValueError, match=r"no layout or distribution was given and none is set"):
        kdist.distribute_batch(local)
    dist = kdist.ModelParallel(layout_map=kdist.LayoutMap(mesh_2x4))
    with dist.scope():
        scoped = kdist.distribute_batch((local, local[:, 0]))
    assert isinstance(scoped, tuple)
    assert tuple(scoped[0].sharding.spec) == ("batch", None)
    assert tuple(scoped[1].sharding.spec) == ("batch",)


def test_distribute_batch_errors(mesh_2x4: kdist.DeviceMesh) -> None:
    dist = kdist.DataParallel()
    with pytest.raises(
        TypeError,
        match=r"expected a kdist.Distribution, a kdist.TensorLayout, a keras.distribution."
        r"TensorLayout or a jax.sharding.Sharding\. Received: 'batch'",
    ):
        kdist.distribute_batch(np.ones((8, 2)), "batch")
    with pytest.raises(TypeError, match=r"every leaf of the batch must be an array with a shape"):
        kdist.distribute_batch([1.0, 2.0], dist)
    # JAX refuses 5 rows over 8 devices; its wording changes between versions, so only
    # the type is asserted.
    with pytest.raises(ValueError):
        kdist.distribute_batch(np.ones((5, 2)), dist)


def test_no_warning_from_one_dimensional_data_parallel(jax_cpu: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kdist.DataParallel(device_mesh=kdist.DeviceMesh((8,), ["batch"]))
