"""DeviceMesh, TensorLayout and LayoutMap (kdist._layouts) in one process with 8 CPU
devices: what they accept, what they refuse, and the JAX objects they become."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kdist

# Part of the fast subset the test command also runs at the oldest supported JAX and Keras.
pytestmark = pytest.mark.compat

# --- DeviceMesh ----------------------------------------------------------------------------


def test_device_mesh_defaults_to_every_device_in_row_major_order(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh((2, 4), ["batch", "model"])
    assert mesh.shape == (2, 4)
    assert mesh.axis_names == ("batch", "model")
    assert mesh.devices.shape == (2, 4)
    assert mesh.devices.tolist() == [
        [f"cpu:{i}" for i in range(4)],
        [f"cpu:{i}" for i in range(4, 8)],
    ]
    assert "(2, 4)" in repr(mesh) and "'model'" in repr(mesh)


def test_device_mesh_builds_its_jax_mesh_once(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh([4, 2], ("data", "model"))
    backend = mesh.backend_mesh
    assert isinstance(backend, jax_cpu.sharding.Mesh)
    assert backend.axis_names == ("data", "model")
    assert dict(backend.shape) == {"data": 4, "model": 2}
    assert [d.id for d in backend.devices.flat] == list(range(8))
    assert mesh.backend_mesh is backend


def test_device_mesh_accepts_jax_devices_nested_lists_and_numpy_arrays(jax_cpu: Any) -> None:
    devices = jax_cpu.devices()
    from_objects = kdist.DeviceMesh((2, 2), ["a", "b"], devices=devices[4:])
    assert from_objects.devices[1, 0] is devices[6]
    assert list(from_objects.backend_mesh.devices.flat) == devices[4:]

    nested = kdist.DeviceMesh((2, 2), ["a", "b"], devices=[["cpu:7", "cpu:6"], ["cpu:5", "cpu:4"]])
    assert nested.devices.tolist() == [["cpu:7", "cpu:6"], ["cpu:5", "cpu:4"]]
    assert [d.id for d in nested.backend_mesh.devices.flat] == [7, 6, 5, 4]

    array = kdist.DeviceMesh((4,), ["a"], devices=np.array(["cpu:0", "cpu:1", "cpu:2", "cpu:3"]))
    assert array.devices.tolist() == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]

    mixed = kdist.DeviceMesh((2,), ["a"], devices=["cpu:1", devices[0]])
    assert [d.id for d in mixed.backend_mesh.devices.flat] == [1, 0]


def test_device_mesh_normalizes_device_strings(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh((2,), ["a"], devices=[" CPU:3 ", "cpu"])
    assert mesh.devices.tolist() == ["cpu:3", "cpu:0"]


def test_device_mesh_devices_are_read_only(jax_cpu: Any) -> None:
    mesh = kdist.DeviceMesh((8,), ["batch"])
    with pytest.raises(ValueError, match="read-only"):
        mesh.devices[0] = "cpu:7"


@pytest.mark.parametrize(
    ("shape", "axis_names", "error", "message"),
    [
        ((), [], ValueError, r"^Shape and axis_names cannot be empty\. DeviceMesh: .* shape=\(\)"),
        ((8,), [], ValueError, r"cannot be empty\. .* Received: shape=\(8,\), axis_names=\[\]"),
        (
            (2, 4),
            ["batch"],
            ValueError,
            r"^Shape and axis_names should have same size\. DeviceMesh: one axis name per mesh "
            r"dimension, .* Received: shape=\(2, 4\), axis_names=\['batch'\]",
        ),
        (8, ["batch"], TypeError, r"shape must be a sequence .* Received: shape=8 of type int"),
        ((8.0,), ["batch"], TypeError, r"must be an integer\. .* 8\.0 is a float"),
        ((True,), ["batch"], TypeError, r"must be an integer"),
        ((0, 8), ["a", "b"], ValueError, r"must be at least 1\. Received: shape=\(0, 8\)"),
        ((8,), "batch", TypeError, r"for one axis write \['batch'\]"),
        ((8,), [1], TypeError, r"every axis name must be a string.*the name 1 is a int"),
        ((8,), [""], ValueError, r"axis names must not be empty"),
        ((2, 4), ["a", "a"], ValueError, r"axis names must be distinct, but \['a'\] repeat"),
    ],
)
def test_device_mesh_rejects_bad_shapes_and_names(
    jax_cpu: Any, shape: Any, axis_names: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        kdist.DeviceMesh(shape, axis_names)


def test_device_mesh_needs_as_many_devices_as_the_shape(jax_cpu: Any) -> None:
    with pytest.raises(ValueError, match=r"shape \(4, 4\) needs 16 devices .* 8 were given"):
        kdist.DeviceMesh((4, 4), ["a", "b"])
    with pytest.raises(ValueError, match=r"needs 8 devices .* but 2 were given"):
        kdist.DeviceMesh((8,), ["a"], devices=["cpu:0", "cpu:1"])


def test_device_mesh_reports_an_unknown_device_at_construction(jax_cpu: Any) -> None:
    with pytest.raises(
        ValueError,
        match=r"^Device not found: cpu:99\. DeviceMesh: device 'cpu:99' \(devices\[1\]\) is not "
        r"one of JAX's cpu devices here: "
        r"cpu:0, cpu:1, .*cpu:7\. Use kdist.list_devices\(\)",
    ):
        kdist.DeviceMesh((2,), ["a"], devices=["cpu:0", "cpu:99"])
    with pytest.raises(
        ValueError, match=r"device 'tpu:0' \(devices\[0\]\) is not available: .*cpu"
    ):
        kdist.DeviceMesh((1,), ["a"], devices=["tpu:0"])


@pytest.mark.parametrize("device", ["cpu:x", "cpu:-1", ":0", "cpu:", "cpu:٣"])
def test_device_mesh_rejects_malformed_device_strings(jax_cpu: Any, device: str) -> None:
    with pytest.raises(ValueError, match=r"form 'type:id'.* Received: devices\[0\]="):
        kdist.DeviceMesh((1,), ["a"], devices=[device])


def test_device_mesh_rejects_repeated_devices(jax_cpu: Any) -> None:
    devices = jax_cpu.devices()
    with pytest.raises(ValueError, match=r"cpu:1 is devices\[0\] and devices\[2\]"):
        kdist.DeviceMesh((4,), ["a"], devices=["cpu:1", "cpu:2", "CPU:1", "cpu:3"])
    with pytest.raises(ValueError, match=r"cpu:0 is devices\[0\] and devices\[1\]"):
        kdist.DeviceMesh((2,), ["a"], devices=[devices[0], "cpu:0"])


def test_device_mesh_rejects_devices_of_the_wrong_type(jax_cpu: Any) -> None:
    with pytest.raises(TypeError, match=r"devices must be a sequence .* Received: devices='cpu:0'"):
        kdist.DeviceMesh((1,), ["a"], devices="cpu:0")
    with pytest.raises(TypeError, match=r"Received: devices=CpuDevice"):
        kdist.DeviceMesh((1,), ["a"], devices=jax_cpu.devices()[0])
    with pytest.raises(TypeError, match=r"Received: devices\[1\]=1 of type int"):
        kdist.DeviceMesh((2,), ["a"], devices=["cpu:0", 1])


# --- TensorLayout --------------------------------------------------------------------------


def test_tensor_layout_converts_to_a_cached_named_sharding(mesh_2x4: kdist.DeviceMesh) -> None:
    import jax

    layout = kdist.TensorLayout(["batch", None, "model"], mesh_2x4)
    assert layout.axes == ("batch", None, "model")
    assert layout.device_mesh is mesh_2x4
    sharding = layout.backend_layout
    assert isinstance(sharding, jax.sharding.NamedSharding)
    assert sharding.spec == jax.sharding.PartitionSpec("batch", None, "model")
    assert sharding.mesh is mesh_2x4.backend_mesh
    assert layout.backend_layout is sharding
    assert "axes=('batch', None, 'model')" in repr(layout)


def test_tensor_layout_splits_a_dimension_over_several_axes(mesh_2x4: kdist.DeviceMesh) -> None:
    import jax

    layout = kdist.TensorLayout([["batch", "model"], None], mesh_2x4)
    assert layout.axes == (("batch", "model"), None)
    assert layout.backend_layout.spec == jax.sharding.PartitionSpec(("batch", "model"), None)
    array = kdist.distribute_tensor(np.arange(16.0).reshape(8, 2), layout)
    rows = sorted(shard.index[0].start for shard in array.addressable_shards)
    assert rows == list(range(8))


def test_tensor_layout_mesh_can_be_set_once(mesh_2x4: kdist.DeviceMesh) -> None:
    layout = kdist.TensorLayout((None, "model"))
    assert layout.device_mesh is None
    with pytest.raises(
        ValueError,
        match=r"^Cannot create sharding when device mesh is not set for TensorLayout\. .* Pass ",
    ):
        _ = layout.backend_layout
    layout.device_mesh = mesh_2x4
    assert layout.device_mesh is mesh_2x4
    with pytest.raises(
        ValueError,
        match=r"^Cannot override device mesh value\. TensorLayout: the mesh can be set once",
    ):
        layout.device_mesh = mesh_2x4
    with pytest.raises(
        TypeError,
        match=r"device_mesh must be a kdist.DeviceMesh or a keras\S*\. Received: device_mesh='x'",
    ):
        kdist.TensorLayout((None,)).device_mesh = "x"  # type: ignore[assignment]


def test_tensor_layout_checks_axes_against_the_mesh(mesh_2x4: kdist.DeviceMesh) -> None:
    with pytest.raises(
        ValueError,
        match=r"^Invalid axis names for Layout\. TensorLayout: \['data'\] are not axes of the "
        r"device mesh; valid axis names: "
        r"\['batch', 'model'\]\. Received: axes=\('data', None\)",
    ):
        kdist.TensorLayout(("data", None), mesh_2x4)
    later = kdist.TensorLayout((("batch", "data"),))
    with pytest.raises(
        ValueError, match=r"^Invalid axis names for Layout\. TensorLayout: \['data'\]"
    ):
        later.device_mesh = mesh_2x4
    assert later.device_mesh is None


@pytest.mark.parametrize(
    ("axes", "error", "message"),
    [
        ("model", TypeError, r"for one dimension write \('model',\)"),
        (None, TypeError, r"axes must be a sequence .* Received: axes=None of type NoneType"),
        ((None, 3), TypeError, r"the entry 3 is a int"),
        (((1, "a"),), TypeError, r"the entry \(1, 'a'\) is a tuple"),
        (("model", "model"), ValueError, r"at most one tensor dimension, but \['model'\] appear"),
        ((("batch", "model"), "batch"), ValueError, r"but \['batch'\] appear more than once"),
    ],
)
def test_tensor_layout_rejects_bad_axes(axes: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        kdist.TensorLayout(axes)


# --- LayoutMap -----------------------------------------------------------------------------


def test_layout_map_lookup_exact_then_regex_then_none(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    exact = kdist.TensorLayout(("model", None))
    layout_map["model/dense_9/kernel"] = exact
    assert layout_map["model/dense_9/kernel"] is exact  # also matches '.*dense.*kernel'
    assert layout_map["dense_1/kernel"].axes == (None, "model")
    assert layout_map["dense_1/bias"].axes == ("model",)
    assert layout_map["conv2d_123/kernel"].axes == (None, None, None, "model")
    assert layout_map["conv3d_1/kernel"] is None
    assert layout_map["outer/dense_1/inner/kernel"].axes == (None, "model")  # '.*' spans '/'
    assert layout_map["dense_1/kernel/extra"] is None  # the whole path must match
    # fullmatch, not search: a key must match the whole path.
    plain = kdist.LayoutMap(mesh_2x4)
    plain["dense"] = ("model",)
    assert plain["my_dense_1"] is None
    assert plain["dense"].axes == ("model",)


def test_layout_map_rejects_ambiguous_paths(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    layout_map["dense_1/.*"] = ("model",)
    with pytest.raises(
        ValueError,
        match=r"^Path 'dense_1/kernel' matches multiple layout specification keys: "
        r"\['\.\*dense\.\*kernel', 'dense_1/\.\*'\]\. LayoutMap: make each path",
    ):
        layout_map["dense_1/kernel"]
    with pytest.raises(ValueError, match="matches multiple layout specification keys"):
        _ = "dense_1/kernel" in layout_map
    with pytest.raises(ValueError, match="matches multiple layout specification keys"):
        layout_map.get("dense_1/kernel")


def test_layout_map_contains_and_get_behave_like_a_mapping(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    assert "dense_1/kernel" in layout_map
    assert ".*dense.*kernel" in layout_map
    assert "conv3d_1/kernel" not in layout_map
    assert 42 not in layout_map
    sentinel = object()
    assert layout_map.get("conv3d_1/kernel", sentinel) is sentinel
    assert layout_map.get("conv3d_1/kernel") is None
    assert layout_map.get("dense_1/kernel", sentinel) is layout_map[".*dense.*kernel"]
    with pytest.raises(TypeError, match=r"a lookup key must be a string .* Received: 42"):
        layout_map[42]  # type: ignore[index]


def test_layout_map_converts_values_and_injects_its_mesh(mesh_2x4: kdist.DeviceMesh) -> None:
    layout_map = kdist.LayoutMap(mesh_2x4)
    assert layout_map.device_mesh is mesh_2x4
    layout_map["a"] = (None, "model")
    layout_map["b"] = [["batch", "model"]]
    bare = kdist.TensorLayout(("batch",))
    layout_map["c"] = bare
    other_mesh = kdist.DeviceMesh((8,), ["model"])
    own = kdist.TensorLayout(("model",), other_mesh)
    layout_map["d"] = own
    assert isinstance(layout_map["a"], kdist.TensorLayout)
    assert layout_map["a"].device_mesh is mesh_2x4
    assert layout_map["b"].axes == (("batch", "model"),)
    assert layout_map["c"] is bare and bare.device_mesh is mesh_2x4
    assert layout_map["d"] is own and own.device_mesh is other_mesh


def test_layout_map_rejects_bad_keys_and_values(mesh_2x4: kdist.DeviceMesh) -> None:
    layout_map = kdist.LayoutMap(mesh_2x4)
    layout_map["dense.*"] = ("model",)
    with pytest.raises(
        ValueError,
        match=r"^dense\.\* already exist in the LayoutMap with value .* delete 'dense\.\*' first",
    ):
        layout_map["dense.*"] = ("batch",)
    with pytest.raises(ValueError, match=r"the key 'dense\[' is not a valid regular expression"):
        layout_map["dense["] = ("model",)
    with pytest.raises(TypeError, match=r"keys must be strings .* Received: 3 of type int"):
        layout_map[3] = ("model",)  # type: ignore[index]
    with pytest.raises(
        TypeError, match=r"^model should be a TensorLayout type, got .* a value must be a kdist"
    ):
        layout_map["conv"] = "model"  # type: ignore[assignment]
    with pytest.raises(
        ValueError, match=r"^Invalid axis names for Layout\. TensorLayout: \['data'\]"
    ):
        layout_map["conv"] = ("data",)
    assert list(layout_map) == ["dense.*"]
    with pytest.raises(
        TypeError,
        match=r"LayoutMap: device_mesh must be a kdist.DeviceMesh or a keras.distribution",
    ):
        kdist.LayoutMap(None)  # type: ignore[arg-type]


def test_layout_map_mutable_mapping_methods(
    mesh_2x4: kdist.DeviceMesh, layout_map: kdist.LayoutMap
) -> None:
    assert len(layout_map) == 3
    assert list(layout_map) == [".*dense.*kernel", ".*dense.*bias", ".*conv2d.*kernel"]
    assert [layout.axes for layout in layout_map.values()] == [
        (None, "model"),
        ("model",),
        (None, None, None, "model"),
    ]
    kernel = layout_map[".*dense.*kernel"]
    del layout_map[".*dense.*kernel"]
    assert layout_map["dense_1/kernel"] is None
    with pytest.raises(KeyError):
        del layout_map["dense_1/bias"]  # lookups match regexes; deletion takes stored keys
    with pytest.raises(KeyError):
        layout_map.pop("dense_1/bias")
    assert layout_map.pop("dense_1/bias", None) is None
    assert layout_map.pop(".*dense.*bias").axes == ("model",)
    assert layout_map.setdefault("conv2d_1/kernel", ("model",)).axes == (None, None, None, "model")
    added = layout_map.setdefault("dense_2/kernel", [None, "model"])
    assert added.axes == (None, "model") and added.device_mesh is mesh_2x4
    layout_map.update({"head/.*": kernel})
    assert layout_map["head/kernel"] is kernel
    assert dict(layout_map) == {
        ".*conv2d.*kernel": layout_map[".*conv2d.*kernel"],
        "dense_2/kernel": added,
        "head/.*": kernel,
    }
    layout_map.clear()
    assert len(layout_map) == 0 and layout_map["dense_2/kernel"] is None
    assert "LayoutMap device_mesh=<DeviceMesh" in repr(layout_map)
