"""DeviceMesh: devices arranged in a named n-dimensional grid (a `jax.sharding.Mesh`)."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from typing import Any, Self, cast

from kdist import _jax_backend, _state
from kdist._errors import ArgumentTypeError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

# How many device names an error message lists before it abbreviates.
_LISTED_DEVICES = 16
# Said of a mesh made before Keras was imported, while Keras is loaded (see DeviceMesh).
_BEFORE_KERAS = (
    "made before Keras was imported, so Keras code does not take it as a "
    "keras.distribution.DeviceMesh: make the kdist.DeviceMesh after importing keras"
)


# The attribute of a Keras-readable mesh class that holds the class it was made from.
_MADE_FROM = "_kdist_made_from"


def _made_before_keras(cls: type) -> bool:
    """Whether Keras is loaded and `cls` is not Keras-readable: its meshes were made
    before Keras was imported."""
    bridge = _state.keras_bridge()
    return bridge is not None and bridge.mesh_class(cls) is not cls


class _DeviceMeshClass(type):
    """DeviceMesh's metaclass, for one sentence. Keras code that refuses a mesh made
    before Keras was imported names only its class (KerasHub: "Invalid device_mesh
    type. Expected `keras.distribution.Device`, got <class ...>"), so while Keras is
    loaded the class of such meshes says why in its repr."""

    def __repr__(cls) -> str:
        plain = super().__repr__()
        if _made_before_keras(cls):
            return f"{plain[:-1]} ({_BEFORE_KERAS})>"
        return plain


class DeviceMesh(metaclass=_DeviceMeshClass):
    """A cluster of devices arranged as a named n-dimensional grid.

    The kdist counterpart of `keras.distribution.DeviceMesh`, backed by a
    `jax.sharding.Mesh` that is built on first use and cached. Devices are
    Keras strings ("cpu:0", "gpu:3") or `jax.Device` objects; every string
    is checked against JAX's global devices when the mesh is made, so a
    device that does not exist is reported at once (Keras reports it only
    when the JAX mesh is first needed).

    Keras code takes it: a mesh made while Keras is loaded is also a
    `keras.distribution.DeviceMesh` (`isinstance` holds), so it can be
    given to Keras's `LayoutMap`, `DataParallel`, `ModelParallel` or to
    KerasHub's `Backbone.get_layout_map(device_mesh)`. kdist does not import
    Keras for this: the Keras bridge, once loaded, gives `DeviceMesh.__new__`
    a class that subclasses both (made once per class). A mesh made before
    Keras was imported stays a plain kdist mesh, which Keras code refuses;
    its repr (and its class's) says so while Keras is loaded. kdist's own
    types take either.

    Args:
        shape: The mesh shape, a non-empty sequence of positive integers such
            as `(8,)` (data parallel) or `(2, 4)` (data x model parallel).
        axis_names: One name per mesh dimension, such as `("batch", "model")`.
            Layouts refer to mesh dimensions by these names.
        devices: The devices, `math.prod(shape)` of them, as a flat or nested
            sequence (or numpy array) of device strings or `jax.Device`
            objects, laid out in row-major order. Defaults to None:
            `kdist.list_devices()` (every global device of the default type).

    Raises:
        kdist.ArgumentTypeError: `shape`, `axis_names` or `devices` has the
            wrong type (a bare string where a sequence is expected, a float in
            `shape`): a TypeError and, as in Keras, a ValueError.
        ValueError: `shape` or `axis_names` is empty, their lengths differ,
            a dimension is not positive, an axis name repeats, the number of
            devices differs from the product of `shape`, a device repeats, or
            a device string is malformed or names no device JAX has. Where
            Keras rejects the same mistake, the message begins with Keras's
            sentence ("Shape and axis_names cannot be empty", "Shape and
            axis_names should have same size", "Shape does not match the
            number of devices").

    Example:
        >>> import kdist
        >>> mesh = kdist.DeviceMesh((1,), ["batch"], devices=["cpu:0"])
        >>> mesh.shape, mesh.axis_names, mesh.devices.tolist()
        ((1,), ('batch',), ['cpu:0'])
        >>> mesh.backend_mesh.shape["batch"]
        1
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.DeviceMesh

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """A new mesh of `cls`, or of the Keras bridge's subclass of `cls` and of
        `keras.distribution.DeviceMesh` while Keras is loaded (see the class
        docstring); `__init__` does the rest either way."""
        bridge = _state.keras_bridge()
        chosen = cls if bridge is None else bridge.mesh_class(cls)
        return object.__new__(chosen)

    def __init__(
        self,
        shape: Sequence[int],
        axis_names: Sequence[str],
        devices: Sequence[Any] | np.ndarray | None = None,
    ) -> None:
        _check_not_empty(shape, axis_names)
        shape_tuple = _check_shape(shape, axis_names)
        names = _check_axis_names(axis_names, shape_tuple, shape)
        if devices is None:
            from kdist._devices import list_devices

            devices = list_devices()
        flat = _flatten_devices(devices, "DeviceMesh")
        expected = math.prod(shape_tuple)
        if len(flat) != expected:
            raise ValueError(
                "Shape does not match the number of devices. DeviceMesh: shape "
                f"{shape_tuple} needs {expected} devices (the product of the shape), but "
                f"{len(flat)} were given. Received: shape={shape!r}, {len(flat)} devices"
            )
        present: dict[str, tuple[list[str], set[str]]] = {}  # per platform, looked up once
        entries = [_check_device(device, index, present) for index, device in enumerate(flat)]
        _check_distinct(entries)

        import numpy as np  # here, not at import: kdist.Distribution & co. stay cheap to load

        values = [value for value, _ in entries]
        if all(isinstance(value, str) for value in values):
            array = np.array(values).reshape(shape_tuple)
        else:
            array = np.empty(len(values), dtype=object)
            array[:] = values
            array = array.reshape(shape_tuple)
        array.flags.writeable = False

        self._shape = shape_tuple
        self._axis_names = names
        self._devices = array
        self._labels = [label for _, label in entries]
        self._backend_mesh: Any = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The mesh shape, a tuple of positive integers."""
        return self._shape

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The name of each mesh dimension, a tuple of strings."""
        return self._axis_names

    @property
    def devices(self) -> np.ndarray:
        """The devices (as given: strings or `jax.Device`), a read-only numpy
        array of the mesh's shape."""
        return self._devices

    @property
    def backend_mesh(self) -> Any:
        """The `jax.sharding.Mesh` of this mesh, built on first use and cached.

        Raises:
            ValueError: a device string names no device any more (the job's
                devices changed since this mesh was made).
        """
        if self._backend_mesh is None:
            import numpy as np

            jax_devices = np.empty(len(self._labels), dtype=object)
            flat = self._devices.reshape(-1)
            if all(_jax_backend.is_device(value) for value in flat):
                jax_devices[:] = list(flat)
            else:
                jax_devices[:] = _jax_backend.devices_by_label(self._labels)
            # Concurrent first uses may both build it; the meshes are equal.
            self._backend_mesh = _jax_backend.make_mesh(
                jax_devices.reshape(self._shape), self._axis_names
            )
        return self._backend_mesh

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its state under kdist's class (a Keras-readable class is made at
        run time, so pickle could not name it); unpickling asks `__new__` again."""
        cls = vars(type(self)).get(_MADE_FROM, type(self))
        return (_remake, (cls, {**vars(self), "_backend_mesh": None}))

    def __repr__(self) -> str:
        note = f", {_BEFORE_KERAS}" if _made_before_keras(type(self)) else ""
        return f"<DeviceMesh shape={self._shape}, axis_names={self._axis_names}{note}>"


def _remake(cls: type[DeviceMesh], state: dict[str, Any]) -> DeviceMesh:
    """A pickled mesh again (see `DeviceMesh.__reduce__`)."""
    mesh = cls.__new__(cls)
    vars(mesh).update(state)
    return mesh


def as_kdist_mesh(value: object, where: str, *, none_allowed: bool = False) -> DeviceMesh:
    """`value` when it is a kdist `DeviceMesh`; the kdist mesh equivalent to a
    `keras.distribution.DeviceMesh` (converted by the Keras bridge, the one conversion
    path kdist has: the same kdist mesh for one Keras mesh).

    Raises:
        kdist.ArgumentTypeError: `value` is neither (a TypeError and a ValueError).
    """
    if isinstance(value, DeviceMesh):
        return value
    bridge = _state.keras_bridge()
    converted = None if bridge is None else bridge.kdist_mesh(value, where)
    if converted is None:
        or_none = " (or None)" if none_allowed else ""
        raise ArgumentTypeError(
            f"{where}: device_mesh must be a kdist.DeviceMesh or a keras.distribution."
            f"DeviceMesh{or_none}. Received: device_mesh={value!r} of type "
            f"{type(value).__name__}"
        )
    return cast("DeviceMesh", converted)


def _is_sequence(value: object) -> bool:
    if isinstance(value, (str, bytes)):
        return False
    if isinstance(value, Sequence):
        return True
    numpy = sys.modules.get("numpy")  # not loaded: the value cannot be a numpy array
    return numpy is not None and isinstance(value, numpy.ndarray)


def _keras_says_empty(value: object) -> bool:
    """Whether Keras's `not value` holds: its "cannot be empty" check (also for a bare
    string, None or 0, which kdist refuses as the wrong type)."""
    if _is_sequence(value) or isinstance(value, (str, bytes)):
        return len(cast("Sequence[object]", value)) == 0
    try:
        return not value
    except (TypeError, ValueError):
        return False


def _check_not_empty(shape: object, axis_names: object) -> None:
    if not (_keras_says_empty(shape) or _keras_says_empty(axis_names)):
        return
    wrong = [
        f"{name} must be a sequence, not a {type(value).__name__}"
        for name, value in (("shape", shape), ("axis_names", axis_names))
        if not _is_sequence(value)
    ]
    detail = "; ".join(["give at least one dimension and one axis name", *wrong])
    error = ArgumentTypeError if wrong else ValueError
    raise error(
        f"Shape and axis_names cannot be empty. DeviceMesh: {detail}. "
        f"Received: shape={shape!r}, axis_names={axis_names!r}"
    )


def _check_shape(shape: object, axis_names: object) -> tuple[int, ...]:
    if not _is_sequence(shape):
        raise ArgumentTypeError(
            "DeviceMesh: shape must be a sequence of positive integers such as (8,) or (2, 4). "
            f"Received: shape={shape!r} of type {type(shape).__name__}"
        )
    shape = cast("Sequence[object]", shape)
    dims = []
    for dim in shape:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise ArgumentTypeError(
                "DeviceMesh: every dimension of shape must be an integer. "
                f"Received: shape={shape!r} (the dimension {dim!r} is a {type(dim).__name__})"
            )
        if dim < 1:
            raise ValueError(
                "DeviceMesh: every dimension of shape must be at least 1. "
                f"Received: shape={shape!r}"
            )
        dims.append(int(dim))
    return tuple(dims)


def _check_axis_names(
    axis_names: object, shape: tuple[int, ...], given_shape: object
) -> tuple[str, ...]:
    if not _is_sequence(axis_names):
        hint = f" (for one axis write [{axis_names!r}])" if isinstance(axis_names, str) else ""
        # Keras counts a string's characters as names: where their number differs, it says so.
        keras = _SAME_SIZE if isinstance(axis_names, str) and len(axis_names) != len(shape) else ""
        raise ArgumentTypeError(
            f"{keras}DeviceMesh: axis_names must be a sequence of strings, one per dimension "
            f"of shape{hint}. Received: axis_names={axis_names!r} of type "
            f"{type(axis_names).__name__}"
        )
    names = list(cast("Sequence[object]", axis_names))
    if len(names) != len(shape):
        raise ValueError(
            f"{_SAME_SIZE}DeviceMesh: one axis name per mesh dimension, but shape has "
            f"{len(shape)} and axis_names {len(names)}. Received: shape={given_shape!r}, "
            f"axis_names={axis_names!r}"
        )
    for name in names:
        if not isinstance(name, str):
            raise ArgumentTypeError(
                "DeviceMesh: every axis name must be a string. "
                f"Received: axis_names={axis_names!r} (the name {name!r} is a "
                f"{type(name).__name__})"
            )
        if not name:
            raise ValueError(
                f"DeviceMesh: axis names must not be empty. Received: axis_names={axis_names!r}"
            )
    checked = [str(name) for name in names]  # numpy strings become plain ones
    repeated = sorted({name for name in checked if checked.count(name) > 1})
    if repeated:
        raise ValueError(
            f"DeviceMesh: axis names must be distinct, but {repeated} repeat. "
            f"Received: axis_names={axis_names!r}"
        )
    return tuple(checked)


_SAME_SIZE = "Shape and axis_names should have same size. "


def _flatten_devices(devices: object, where: str) -> list[Any]:
    if _jax_backend.is_device(devices) or not _is_sequence(devices):
        raise ArgumentTypeError(
            f"{where}: devices must be a sequence (or numpy array) of device strings such as "
            "'cpu:0' or of jax.Device objects, or None for kdist.list_devices(). "
            f"Received: devices={devices!r} of type {type(devices).__name__}"
        )
    flat: list[Any] = []
    # An explicit stack rather than recursion; nesting depth is the mesh rank.
    stack: list[Any] = [iter(cast("Sequence[Any]", devices))]
    while stack:
        item = next(stack[-1], _DONE)
        if item is _DONE:
            stack.pop()
        elif _is_sequence(item) and not _jax_backend.is_device(item):
            stack.append(iter(cast("Sequence[Any]", item)))
        else:
            flat.append(_plain(item))
    return flat


_DONE = object()


def _plain(item: object) -> object:
    """A numpy scalar (np.str_ from an array of device strings) as a Python object."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(item, numpy.generic):
        return item.item()
    return item


def _check_device(
    device: object, index: int, present: dict[str, tuple[list[str], set[str]]]
) -> tuple[Any, str]:
    """(the value kept in `devices`, its "platform:id" label). `present` caches JAX's
    devices of each platform seen so far."""
    if _jax_backend.is_device(device):
        return device, _jax_backend.device_label(device)
    if not isinstance(device, str):
        raise ArgumentTypeError(
            "DeviceMesh: each device must be a string such as 'cpu:0' or 'gpu:3', or a "
            f"jax.Device. Received: devices[{index}]={device!r} of type {type(device).__name__}"
        )
    platform, colon, number = device.strip().lower().partition(":")
    if not colon:
        number = "0"  # Keras reads "gpu" as "gpu:0".
    if not platform or not number.isdigit() or not number.isascii():
        raise ValueError(
            "DeviceMesh: a device string has the form 'type:id', such as 'cpu:0' or 'gpu:3'. "
            f"Received: devices[{index}]={device!r}"
        )
    label = f"{platform}:{int(number)}"
    if platform not in present:
        labels = _present_devices(platform, device, index)
        present[platform] = (labels, set(labels))
    labels, known = present[platform]
    if label not in known:
        raise ValueError(
            f"Device not found: {device}. DeviceMesh: device {device!r} (devices[{index}]) "
            f"is not one of JAX's {platform} devices here: {_abbreviate(labels)}. Use "
            "kdist.list_devices() to see the devices of the job."
        )
    return label, label


def _present_devices(platform: str, device: str, index: int) -> list[str]:
    from kdist._devices import list_devices
    from kdist._errors import ConfigError

    try:
        return list_devices(platform)
    except ConfigError as error:
        raise ValueError(
            f"DeviceMesh: device {device!r} (devices[{index}]) is not available: {error}"
        ) from None


def _check_distinct(entries: list[tuple[Any, str]]) -> None:
    seen: dict[str, int] = {}
    for index, (_, label) in enumerate(entries):
        if label in seen:
            raise ValueError(
                f"DeviceMesh: each device may appear once, but {label} is devices[{seen[label]}] "
                f"and devices[{index}]. Received {len(entries)} devices."
            )
        seen[label] = index


def _abbreviate(labels: list[str]) -> str:
    if len(labels) <= _LISTED_DEVICES:
        return ", ".join(labels)
    shown = ", ".join(labels[:_LISTED_DEVICES])
    return f"{shown}, ... ({len(labels)} in all)"
