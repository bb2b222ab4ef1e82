"""kdist's distribution types side by side with keras.distribution (Keras on JAX).

Same inputs to both; equal results wherever Keras is not defective. Where kdist differs on
purpose, the test asserts both behaviours, so each difference is documented by a test (the
"Differences from Keras" table in docs/distribution.md lists them).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import kdist
from helpers.support import NEEDS_KERAS

# Part of the fast subset the test command also runs at the oldest supported JAX and Keras.
pytestmark = [pytest.mark.compat, NEEDS_KERAS]


@pytest.fixture
def kd(keras_on_jax: Any) -> Any:
    """`keras.distribution` with the JAX backend, on the same 8 CPU devices as kdist."""
    return keras_on_jax.distribution


@pytest.fixture
def dense_weights(kd: Any) -> list[Any]:
    """Real keras.Variables with real paths: dense_1/kernel, dense_1/bias, conv2d_7/kernel,
    conv2d_7/bias, embedding/embeddings."""
    import keras

    dense = keras.layers.Dense(8, name="dense_1")
    dense.build((None, 4))
    conv = keras.layers.Conv2D(8, 3, name="conv2d_7")
    conv.build((None, 6, 6, 2))
    embedding = keras.layers.Embedding(10, 4, name="embedding")
    embedding.build((None,))
    return [*dense.weights, *conv.weights, *embedding.weights]


def spec(layout: Any) -> tuple[Any, ...] | None:
    """The PartitionSpec of a kdist or keras TensorLayout, as a tuple (None for None)."""
    return None if layout is None else tuple(layout.backend_layout.spec)


# --- DeviceMesh ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis_names", "devices"),
    [
        ((8,), ["batch"], None),
        ((2, 4), ["batch", "model"], None),
        (
            (4, 2),
            ("data", "model"),
            ["cpu:7", "cpu:6", "cpu:5", "cpu:4", "cpu:3", "cpu:2", "cpu:1", "cpu:0"],
        ),
        ((2, 2), ["a", "b"], [["cpu:0", "cpu:2"], ["cpu:4", "cpu:6"]]),
    ],
)
def test_device_mesh_same_shape_devices_and_jax_mesh(
    kd: Any, shape: Any, axis_names: Any, devices: Any
) -> None:
    theirs = kd.DeviceMesh(shape, axis_names, devices)
    ours = kdist.DeviceMesh(shape, axis_names, devices)
    assert ours.shape == tuple(theirs.shape)
    assert ours.axis_names == tuple(theirs.axis_names)
    assert ours.devices.tolist() == theirs.devices.tolist()
    assert ours.backend_mesh == theirs.backend_mesh


def test_device_mesh_of_jax_devices(kd: Any, jax_cpu: Any) -> None:
    devices = jax_cpu.devices()
    theirs = kd.DeviceMesh((2, 4), ["batch", "model"], devices)
    ours = kdist.DeviceMesh((2, 4), ["batch", "model"], devices)
    assert ours.devices.tolist() == theirs.devices.tolist()
    assert ours.backend_mesh == theirs.backend_mesh


@pytest.mark.parametrize(
    ("shape", "axis_names"),
    [((), []), ((8,), []), ((2, 4), ["batch"]), ((4, 4), ["a", "b"]), ((3,), ["a"])],
)
def test_device_mesh_same_error_class(kd: Any, shape: Any, axis_names: Any) -> None:
    with pytest.raises(ValueError):
        kd.DeviceMesh(shape, axis_names)
    with pytest.raises(ValueError):
        kdist.DeviceMesh(shape, axis_names)


def test_difference_unknown_device_fails_at_construction(kd: Any) -> None:
    theirs = kd.DeviceMesh((2,), ["a"], ["cpu:0", "cpu:99"])  # Keras: accepted ...
    with pytest.raises(ValueError, match="Device not found: cpu:99"):
        _ = theirs.backend_mesh  # ... and reported on first use.
    with pytest.raises(ValueError, match=r"device 'cpu:99' \(devices\[1\]\) is not one of"):
        kdist.DeviceMesh((2,), ["a"], ["cpu:0", "cpu:99"])


def test_difference_repeated_devices_are_rejected(kd: Any) -> None:
    theirs = kd.DeviceMesh((2,), ["a"], ["cpu:0", "cpu:0"])
    assert theirs.backend_mesh.devices.size == 2  # Keras and JAX accept a repeated device.
    with pytest.raises(ValueError, match=r"each device may appear once"):
        kdist.DeviceMesh((2,), ["a"], ["cpu:0", "cpu:0"])


def test_difference_shape_and_axis_names_are_tuples(kd: Any) -> None:
    theirs = kd.DeviceMesh([8], ["batch"])
    ours = kdist.DeviceMesh([8], ["batch"])
    assert (theirs.shape, theirs.axis_names) == ([8], ["batch"])  # Keras: what was passed.
    assert (ours.shape, ours.axis_names) == ((8,), ("batch",))


# --- TensorLayout --------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [("batch", None), (None, "model"), (None, None, "model"), ()])
def test_tensor_layout_same_partition_spec(kd: Any, axes: Any) -> None:
    theirs = kd.TensorLayout(axes, kd.DeviceMesh((2, 4), ["batch", "model"]))
    ours = kdist.TensorLayout(axes, kdist.DeviceMesh((2, 4), ["batch", "model"]))
    assert ours.axes == theirs.axes
    assert spec(ours) == spec(theirs)
    assert ours.backend_layout == theirs.backend_layout


def test_tensor_layout_same_error_classes(kd: Any) -> None:
    for module in (kd, kdist):
        mesh = module.DeviceMesh((2, 4), ["batch", "model"])
        with pytest.raises(ValueError):
            module.TensorLayout(("data",), mesh)
        unset = module.TensorLayout(("batch",))
        with pytest.raises(ValueError):
            _ = unset.backend_layout
        unset.device_mesh = mesh
        with pytest.raises(ValueError):
            unset.device_mesh = mesh


def test_difference_tensor_layout_rejects_a_bare_string(kd: Any) -> None:
    assert kd.TensorLayout("model").axes == ("m", "o", "d", "e", "l")  # Keras splits it.
    with pytest.raises(TypeError, match=r"for one dimension write \('model',\)"):
        kdist.TensorLayout("model")


# --- DataParallel --------------------------------------------------------------------------


def test_data_parallel_same_layouts(kd: Any, dense_weights: list[Any]) -> None:
    theirs, ours = kd.DataParallel(), kdist.DataParallel()
    assert ours.device_mesh.devices.tolist() == theirs.device_mesh.devices.tolist()
    assert ours.batch_dim_name == theirs.batch_dim_name == "batch"
    assert ours.num_model_replicas == theirs.num_model_replicas == 8
    assert ours.num_processes == theirs.num_processes
    assert ours.data_shard_id == theirs.data_shard_id
    for shape in [(16,), (16, 3), (64, 28, 28, 1)]:
        assert spec(ours.get_data_layout(shape)) == spec(theirs.get_data_layout(shape))
    for variable in dense_weights:
        assert spec(ours.get_variable_layout(variable)) == spec(
            theirs.get_variable_layout(variable)
        )
    assert ours.get_tensor_layout("dense_1/output") is theirs.get_tensor_layout("x") is None


def test_data_parallel_same_mesh_from_devices_and_from_a_mesh(kd: Any) -> None:
    devices = ["cpu:1", "cpu:3", "cpu:5", "cpu:7"]
    theirs, ours = kd.DataParallel(devices=devices), kdist.DataParallel(devices=devices)
    assert ours.device_mesh.devices.tolist() == theirs.device_mesh.devices.tolist()
    assert spec(ours.get_data_layout((8, 2))) == spec(theirs.get_data_layout((8, 2)))
    theirs = kd.DataParallel(device_mesh=kd.DeviceMesh((8,), ["data"]))
    ours = kdist.DataParallel(device_mesh=kdist.DeviceMesh((8,), ["data"]))
    assert ours.batch_dim_name == theirs.batch_dim_name == "data"
    assert spec(ours.get_data_layout((8, 2))) == spec(theirs.get_data_layout((8, 2)))


def test_data_parallel_uses_a_variables_own_layout_like_keras(
    kd: Any, dense_weights: list[Any]
) -> None:
    kernel = dense_weights[0]
    theirs, ours = kd.DataParallel(), kdist.DataParallel()
    their_layout = kd.TensorLayout((None, "batch"), theirs.device_mesh)
    kernel._layout = their_layout
    try:
        assert theirs.get_variable_layout(kernel) is their_layout
        assert ours.get_variable_layout(kernel) is their_layout
    finally:
        kernel._layout = None


def test_difference_data_parallel_warns_on_a_mesh_of_several_dimensions(kd: Any) -> None:
    with pytest.raises(TypeError, match="category must be a Warning subclass"):
        kd.DataParallel(device_mesh=kd.DeviceMesh((2, 4), ["batch", "model"]))
    with pytest.warns(UserWarning, match="expects a 1-D device mesh"):
        ours = kdist.DataParallel(device_mesh=kdist.DeviceMesh((2, 4), ["batch", "model"]))
    assert ours.num_model_replicas == 2  # the batch axis' size (Keras would count 8 devices)


def test_difference_data_parallel_accepts_a_numpy_array_of_devices(kd: Any) -> None:
    devices = np.array(["cpu:0", "cpu:1"])
    with pytest.raises(ValueError, match="truth value of an array"):
        kd.DataParallel(devices=devices)
    assert kdist.DataParallel(devices=devices).device_mesh.devices.tolist() == ["cpu:0", "cpu:1"]


def test_wrong_types_raise_what_keras_code_catches(kd: Any) -> None:
    """Keras raises ValueError for these; kdist's ArgumentTypeError is a ValueError and a
    TypeError, so `except ValueError:` written for Keras still catches it."""
    with pytest.raises(ValueError, match="Expect `mesh` to be an instance of `DeviceMesh`"):
        kd.DataParallel(device_mesh=(8,))
    with pytest.raises(
        ValueError,
        match=r"^Expect `mesh` to be an instance of `DeviceMesh`\. DataParallel: device_mesh must "
        r"be a kdist\.DeviceMesh",
    ):
        kdist.DataParallel(device_mesh=(8,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a `LayoutMap` instance"):
        kd.ModelParallel(layout_map={})
    with pytest.raises(
        ValueError,
        match=r"^Argument `layout_map` must be a `LayoutMap` instance\. ModelParallel: a "
        r"kdist\.LayoutMap",
    ):
        kdist.ModelParallel(layout_map={})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="should be a TensorLayout type"):
        kd.LayoutMap(kd.DeviceMesh((8,), ["model"]))["k"] = "model"
    our_map = kdist.LayoutMap(kdist.DeviceMesh((8,), ["model"]))
    with pytest.raises(kdist.ArgumentTypeError, match=r"a value must be a kdist\.TensorLayout"):
        our_map["k"] = "model"  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"a value must be a kdist\.TensorLayout"):
        our_map["k"] = 3  # type: ignore[assignment]


# --- ModelParallel -------------------------------------------------------------------------


def _layout_maps(kd: Any) -> tuple[Any, kdist.LayoutMap]:
    maps = []
    for module in (kd, kdist):
        layout_map = module.LayoutMap(module.DeviceMesh((2, 4), ["batch", "model"]))
        layout_map[".*dense.*kernel"] = (None, "model")
        layout_map[".*dense.*bias"] = ("model",)
        layout_map[".*conv2d.*kernel"] = (None, None, None, "model")
        layout_map["conv2d_7/bias"] = ("model",)
        maps.append(layout_map)
    return maps[0], maps[1]


@pytest.mark.parametrize("batch_dim_name", [None, "batch", "model"])
def test_model_parallel_same_layouts(
    kd: Any, dense_weights: list[Any], batch_dim_name: str | None
) -> None:
    their_map, our_map = _layout_maps(kd)
    theirs = kd.ModelParallel(layout_map=their_map, batch_dim_name=batch_dim_name)
    ours = kdist.ModelParallel(layout_map=our_map, batch_dim_name=batch_dim_name)
    assert ours.batch_dim_name == theirs.batch_dim_name
    assert ours.num_model_replicas == theirs.num_model_replicas
    assert ours.data_shard_id == theirs.data_shard_id
    assert ours.device_mesh.devices.tolist() == theirs.device_mesh.devices.tolist()
    for shape in [(16,), (16, 3), (64, 28, 28, 1)]:
        assert spec(ours.get_data_layout(shape)) == spec(theirs.get_data_layout(shape))
    specs = []
    for variable in dense_weights:
        ours_spec = spec(ours.get_variable_layout(variable))
        assert ours_spec == spec(theirs.get_variable_layout(variable)), variable.path
        specs.append(ours_spec)
    assert specs == [
        (None, "model"),
        ("model",),
        (None, None, None, "model"),
        ("model",),
        (None, None),
    ]
    for path in ["dense_1/kernel", "conv2d_7/bias", "conv3d/kernel", "x/dense_2/bias"]:
        assert spec(ours.get_tensor_layout(path)) == spec(theirs.get_tensor_layout(path))


def test_model_parallel_same_error_classes(kd: Any, dense_weights: list[Any]) -> None:
    for module in (kd, kdist):
        with pytest.raises(ValueError):
            module.ModelParallel()
    their_map, our_map = _layout_maps(kd)
    their_map["dense_1/.*"] = ("model",)
    our_map["dense_1/.*"] = ("model",)
    theirs = kd.ModelParallel(layout_map=their_map)
    ours = kdist.ModelParallel(layout_map=our_map)
    with pytest.raises(ValueError):
        theirs.get_variable_layout(dense_weights[0])
    with pytest.raises(ValueError):
        ours.get_variable_layout(dense_weights[0])


def test_difference_model_parallel_checks_batch_dim_name_at_construction(kd: Any) -> None:
    their_map, our_map = _layout_maps(kd)
    theirs = kd.ModelParallel(layout_map=their_map, batch_dim_name="data")
    with pytest.raises(ValueError, match="Invalid axis names"):
        theirs.get_data_layout((8, 2))  # Keras: only when a layout is asked for.
    with pytest.raises(ValueError, match="batch_dim_name must be one of the mesh's axis names"):
        kdist.ModelParallel(layout_map=our_map, batch_dim_name="data")


def test_difference_model_parallel_unknown_keywords(kd: Any) -> None:
    their_map, our_map = _layout_maps(kd)
    kd.ModelParallel(layout_map=their_map, device_mesh=kd.DeviceMesh((8,), ["x"]), typo=1)
    with pytest.raises(TypeError, match="typo"):
        kdist.ModelParallel(layout_map=our_map, typo=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="must be that same mesh"):
        kdist.ModelParallel(layout_map=our_map, device_mesh=kdist.DeviceMesh((8,), ["x"]))


# --- LayoutMap -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".*dense.*kernel",  # exact key
        "conv2d_7/bias",  # exact key, also a regex
        "dense_1/kernel",  # regex
        "model/dense_12/bias",  # regex
        "my_model/conv2d_123/kernel",  # regex
        "conv3d_1/kernel",  # no match
        "dense_1/kernel/extra",  # no match: fullmatch, not search
    ],
)
def test_layout_map_same_lookups(kd: Any, path: str) -> None:
    their_map, our_map = _layout_maps(kd)
    theirs, ours = their_map[path], our_map[path]
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert ours.axes == theirs.axes
        assert spec(ours) == spec(theirs)
    assert list(our_map) == list(their_map)
    assert len(our_map) == len(their_map)


def test_layout_map_same_ambiguity_and_duplicate_errors(kd: Any) -> None:
    for layout_map in _layout_maps(kd):
        layout_map["dense_1/.*"] = ("model",)
        with pytest.raises(ValueError, match="dense_1/kernel"):
            layout_map["dense_1/kernel"]
        with pytest.raises(ValueError):
            layout_map["dense_1/.*"] = ("batch",)
        del layout_map["dense_1/.*"]
        with pytest.raises(KeyError):
            del layout_map["dense_1/.*"]


def test_layout_map_same_mesh_injection(kd: Any) -> None:
    their_map, our_map = _layout_maps(kd)
    assert their_map["dense_1/kernel"].device_mesh is their_map.device_mesh
    assert our_map["dense_1/kernel"].device_mesh is our_map.device_mesh


def test_difference_layout_map_contains_and_get(kd: Any) -> None:
    their_map, our_map = _layout_maps(kd)
    assert "conv3d_1/kernel" in their_map  # Keras: `in` is always True ...
    assert their_map.get("conv3d_1/kernel", "default") is None  # ... and .get ignores default.
    assert "conv3d_1/kernel" not in our_map
    assert our_map.get("conv3d_1/kernel", "default") == "default"
    assert "dense_1/kernel" in their_map and "dense_1/kernel" in our_map


def test_difference_layout_map_rejects_an_invalid_regex_when_inserted(kd: Any) -> None:
    import re

    their_map, our_map = _layout_maps(kd)
    their_map["dense["] = ("model",)  # Keras: accepted, then every regex lookup fails.
    with pytest.raises(re.error):
        their_map["anything"]
    with pytest.raises(ValueError, match="not a valid regular expression"):
        our_map["dense["] = ("model",)
    assert our_map["anything"] is None


def test_difference_layout_map_accepts_lists(kd: Any) -> None:
    their_map, our_map = _layout_maps(kd)
    with pytest.raises(ValueError, match="should be a TensorLayout type"):
        their_map["head/kernel"] = [None, "model"]  # Keras documents lists, accepts tuples only.
    our_map["head/kernel"] = [None, "model"]
    assert our_map["head/kernel"].axes == (None, "model")


# --- distribute_tensor ---------------------------------------------------------------------


def test_distribute_tensor_same_result(kd: Any) -> None:
    import jax

    value = np.arange(32.0).reshape(8, 4)
    their_layout = kd.TensorLayout(("batch", "model"), kd.DeviceMesh((2, 4), ["batch", "model"]))
    our_layout = kdist.TensorLayout(
        ("batch", "model"), kdist.DeviceMesh((2, 4), ["batch", "model"])
    )
    theirs = kd.distribute_tensor(value, their_layout)
    ours = kdist.distribute_tensor(value, our_layout)
    assert ours.sharding == theirs.sharding
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert kdist.distribute_tensor(theirs, our_layout) is theirs
    assert kd.distribute_tensor(ours, their_layout) is ours

    jitted_theirs = jax.jit(lambda x: kd.distribute_tensor(x + 1, their_layout))(ours)
    jitted_ours = jax.jit(lambda x: kdist.distribute_tensor(x + 1, our_layout))(ours)
    assert jitted_ours.sharding.is_equivalent_to(jitted_theirs.sharding, 2)


def test_keras_was_imported_with_the_jax_backend(kd: Any) -> None:
    assert sys.modules["keras"].backend.backend() == "jax"


# --- Keras's validation sentences ------------------------------------------------------------


def _sentence_cases(module: Any) -> list[tuple[str, Any]]:
    """(Keras's sentence, a call that must raise a ValueError beginning with it)."""
    four = [f"cpu:{i}" for i in range(4)]

    def mesh() -> Any:
        return module.DeviceMesh((4, 2), ["data", "model"])

    def duplicate() -> None:
        layout_map = module.LayoutMap(mesh())
        layout_map["dense/kernel"] = (None, "model")
        layout_map["dense/kernel"] = (None, "model")

    def ambiguous() -> None:
        layout_map = module.LayoutMap(mesh())
        layout_map[".*dense.*bias"] = ("model",)
        layout_map[".*bias"] = ("model",)
        layout_map["dense_2/bias"]

    def override() -> None:
        layout = module.TensorLayout(("data",), mesh())
        layout.device_mesh = mesh()

    def value() -> None:
        module.LayoutMap(mesh())["k"] = 3

    return [
        ("Shape and axis_names cannot be empty", lambda: module.DeviceMesh((4,), "", four)),
        ("Shape and axis_names should have same size", lambda: module.DeviceMesh((4, 2), ["a"])),
        (
            "Shape does not match the number of devices",
            lambda: module.DeviceMesh((4, 2), ["a", "b"], four),
        ),
        ("Invalid axis names for Layout", lambda: module.TensorLayout(("data", "x"), mesh())),
        ("dense/kernel already exist", duplicate),
        ("Path 'dense_2/bias' matches multiple layout", ambiguous),
        ("Cannot override device mesh value", override),
        (
            "Cannot create sharding when device mesh is not set for TensorLayout",
            lambda: module.TensorLayout(("data",)).backend_layout,
        ),
        ("3 should be a TensorLayout type", value),
        ("You must specify a layout_map argument", module.ModelParallel),
        (
            "Argument `layout_map` must be a `LayoutMap` instance",
            lambda: module.ModelParallel(layout_map={}),
        ),
        (
            "Expect `mesh` to be an instance of `DeviceMesh`",
            lambda: module.DataParallel(device_mesh=(8,)),
        ),
    ]


def test_validation_messages_begin_with_keras_s_sentence(kd: Any) -> None:
    """Code written against Keras that matches on its sentences keeps working: kdist's
    message begins with the same sentence, and its own detail follows."""
    import re

    where = "(DeviceMesh|TensorLayout|LayoutMap|ModelParallel|DataParallel): "
    cases = zip(_sentence_cases(kd), _sentence_cases(kdist), strict=True)
    for (sentence, theirs), (_, ours) in cases:
        with pytest.raises(ValueError, match=f"^{re.escape(sentence)}"):
            theirs()
        with pytest.raises(ValueError, match=f"^{re.escape(sentence)}.* {where}"):
            ours()


def test_difference_device_mesh_wrong_types_are_argument_type_errors(kd: Any) -> None:
    """Keras raises ValueError for a bare string; kdist's ArgumentTypeError is a ValueError
    (with Keras's sentence first) and a TypeError (with kdist's reason)."""
    four = [f"cpu:{i}" for i in range(4)]
    with pytest.raises(ValueError, match=r"^Shape and axis_names cannot be empty"):
        kd.DeviceMesh((4,), "", four)
    with pytest.raises(
        kdist.ArgumentTypeError, match=r"^Shape and axis_names cannot be empty\. .* not a str"
    ):
        kdist.DeviceMesh((4,), "", four)
    with pytest.raises(ValueError, match=r"^Shape and axis_names should have same size"):
        kd.DeviceMesh((8,), "batch")
    with pytest.raises(
        kdist.ArgumentTypeError,
        match=r"^Shape and axis_names should have same size\. .*\['batch'\]",
    ):
        kdist.DeviceMesh((8,), "batch")
    # Keras counts a string's characters as names and accepts it (JAX fails on it later).
    assert kd.DeviceMesh((2, 1), "ab", ["cpu:0", "cpu:1"]).axis_names == "ab"
    with pytest.raises(
        kdist.ArgumentTypeError, match=r"^DeviceMesh: axis_names must be a sequence of strings"
    ):
        kdist.DeviceMesh((2, 1), "ab", ["cpu:0", "cpu:1"])
    with pytest.raises(kdist.ArgumentTypeError, match="shape must be a sequence"):
        kdist.DeviceMesh("8", ["batch"])


# --- distribute_tensor takes what Keras's takes --------------------------------------------


def test_distribute_tensor_takes_a_jax_format_eagerly_and_under_jit(kd: Any) -> None:
    import functools

    import jax
    from jax.experimental import layout as jax_layout

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("batch", "model"))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch", None))
    # Format since JAX 0.6; Layout (with a sharding) before, as Keras's own test does.
    target = getattr(jax_layout, "Format", getattr(jax_layout, "Layout", None))(sharding=sharding)
    inputs = jax.numpy.arange(128.0).reshape(16, 8)
    for module in (kd, kdist):

        @functools.partial(jax.jit, static_argnames="layout")
        def place(x: Any, layout: Any, module: Any = module) -> Any:
            return module.distribute_tensor(x, layout)

        assert place(inputs, target).sharding.is_equivalent_to(sharding, ndim=2)
        eager = module.distribute_tensor(inputs, target)
        assert eager.sharding.is_equivalent_to(sharding, ndim=2)
        np.testing.assert_array_equal(np.asarray(eager), np.asarray(inputs))
    placed = kdist.distribute_tensor(inputs, target)
    assert kdist.distribute_tensor(placed, target) is placed  # already laid out that way


def test_distribute_tensor_takes_a_keras_tensor_layout(kd: Any) -> None:
    layout = kd.TensorLayout(("batch", None), kd.DeviceMesh((8,), ["batch"]))
    ours = kdist.distribute_tensor(np.ones((8, 2)), layout)
    theirs = kd.distribute_tensor(np.ones((8, 2)), layout)
    assert ours.sharding == theirs.sharding == layout.backend_layout


# --- data_shard_id reads the properties, as Keras's does ----------------------------------


def test_data_shard_id_reads_num_processes_and_process_id_properties(kd: Any) -> None:
    """A subclass that says it is process 3 of 4 with 2 replicas reads shard 1, in Keras
    (its num_processes property) and in kdist (its num_processes and process_id)."""

    class TheirFour(kd.DataParallel):  # type: ignore[misc, name-defined]
        num_processes = property(lambda self: 4)
        num_model_replicas = property(lambda self: 2)

    class OurFour(kdist.DataParallel):
        num_processes = property(lambda self: 4)  # type: ignore[assignment]
        process_id = property(lambda self: 3)  # type: ignore[assignment]
        num_model_replicas = property(lambda self: 2)  # type: ignore[assignment]

    theirs = TheirFour()
    theirs._process_id = 3  # Keras reads the attribute for the process id
    ours = OurFour()
    assert theirs.data_shard_id == ours.data_shard_id == 1
    assert ours.num_data_shards == 2
