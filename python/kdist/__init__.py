"""kdist: Keras 3 distribution utilities for JAX, with a fast, checked start.

`import kdist` costs milliseconds: it imports neither JAX nor the compiled
core. Public names are loaded on first use.

Example:
    >>> import kdist
    >>> kdist.initialize(num_processes=1)
    >>> kdist.cluster_spec().num_processes
    1
    >>> kdist.shutdown()
"""

from kdist._errors import (
    ArgumentTypeError,
    BackupMismatchError,
    BackupStorageError,
    BarrierError,
    BarrierTimeoutError,
    ConfigError,
    CoordinatorUnreachableError,
    InitializationOrderError,
    KdistError,
    PortInUseError,
    RendezvousError,
    RendezvousTimeoutError,
)

__all__ = [
    "ArgumentTypeError",
    "BackupAndRestore",
    "BackupMismatchError",
    "BackupStorageError",
    "BarrierError",
    "BarrierTimeoutError",
    "ConfigError",
    "CoordinatorUnreachableError",
    "DataParallel",
    "DeviceMesh",
    "Distribution",
    "InitializationOrderError",
    "KdistError",
    "LayoutMap",
    "ModelParallel",
    "PortInUseError",
    "RendezvousError",
    "RendezvousTimeoutError",
    "TensorLayout",
    "barrier",
    "cluster_spec",
    "distribute_batch",
    "distribute_tensor",
    "distribution",
    "get_device_count",
    "initialize",
    "is_initialized",
    "list_devices",
    "load_backup",
    "request_stop",
    "set_distribution",
    "should_stop",
    "shutdown",
]

# The wings whose names make or read layouts: the Keras bridge is registered before any
# of them is loaded.
_BRIDGED = ("kdist._layouts.", "kdist._distribution.", "kdist._resume.")
# Where each lazily loaded public name lives.
_LAZY_NAMES = {
    "initialize": "kdist._start.initialize",
    "shutdown": "kdist._start.initialize",
    "is_initialized": "kdist._start.initialize",
    "cluster_spec": "kdist._start.initialize",
    "should_stop": "kdist._together.stop",
    "request_stop": "kdist._together.stop",
    "barrier": "kdist._together.barrier",
    "list_devices": "kdist._devices",
    "get_device_count": "kdist._devices",
    "set_distribution": "kdist._distribution.current",
    "distribution": "kdist._distribution.current",
    "Distribution": "kdist._distribution.distribution",
    "DeviceMesh": "kdist._layouts.device_mesh",
    "TensorLayout": "kdist._layouts.tensor_layout",
    "DataParallel": "kdist._distribution.data_parallel",
    "ModelParallel": "kdist._distribution.model_parallel",
    "LayoutMap": "kdist._layouts.layout_map",
    "distribute_tensor": "kdist._distribution.placement",
    "distribute_batch": "kdist._distribution.placement",
    "BackupAndRestore": "kdist._resume.backup_and_restore",
    "load_backup": "kdist._resume.load_backup",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._devices import get_device_count, list_devices
    from kdist._distribution.current import distribution, set_distribution
    from kdist._distribution.data_parallel import DataParallel
    from kdist._distribution.distribution import Distribution
    from kdist._distribution.model_parallel import ModelParallel
    from kdist._distribution.placement import distribute_batch, distribute_tensor
    from kdist._layouts.device_mesh import DeviceMesh
    from kdist._layouts.layout_map import LayoutMap
    from kdist._layouts.tensor_layout import TensorLayout
    from kdist._resume.backup_and_restore import BackupAndRestore
    from kdist._resume.load_backup import load_backup
    from kdist._start.initialize import cluster_spec, initialize, is_initialized, shutdown
    from kdist._together.barrier import barrier
    from kdist._together.stop import request_stop, should_stop


def __getattr__(name: str) -> object:
    module_name = _LAZY_NAMES.get(name)
    if module_name is None:
        if name == "__version__":
            from kdist._version import __version__

            return __version__
        raise AttributeError(f"module 'kdist' has no attribute {name!r}")
    import importlib

    if module_name.startswith(_BRIDGED):
        # The layout types meet Keras through the bridge, which they may not import: it is
        # registered here, before the first name that makes or reads a layout, for them to
        # ask (_state.keras_bridge(); see kdist/_keras/conversion.py).
        importlib.import_module("kdist._keras.conversion").install()
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | {"__version__"})
