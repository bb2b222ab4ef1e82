"""The arrays of a backup, on Orbax: one Orbax checkpoint (a flat dict of `jax.Array`s,
one entry per variable of the training state) in each backup's `state/` folder.

Orbax (`orbax-checkpoint`, on TensorStore) writes each shard once, from the process that
holds it, and restores each array onto whatever sharding it is asked for, reading only
the parts of it that each process holds: a backup resumes on a job of another shape.

Saving is in the background: `ArrayWriter.start` blocks only while Orbax takes hold of
the values on the host (on a CPU device a view of each buffer, no copy); Orbax writes them
in a thread of its own, and `wait` returns once every process's part is written and Orbax
has finalized the folder (an Orbax checkpoint is complete once its folder has its final
name; kdist commits the backup after that).

No copy is made on the devices first: the trainer donates its state's buffers to its next
step, but a buffer that Orbax holds a host view of is not donated (XLA allocates the next
step's state anew), so what is written is what was saved. Replica-parallel writing is off
(Orbax's default slices each replicated array among its replicas, which costs a copy of
every replicated array on the devices while the step waits): each array is written by
one replica, the one Orbax's own single-replica rule picks. The checkpoint is an ordinary
Orbax PyTree checkpoint: `orbax.checkpoint.StandardCheckpointer().restore` reads it.

Orbax is an optional extra (`pip install kdist[backup]`): `load_orbax` imports it (which
takes seconds) only when a callback is made or a backup is read, and says how to install
it when it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kdist import _jax_backend

STATE = "state"  # the Orbax checkpoint's folder in a backup
INSTALL = 'pip install "kdist[backup]"'


def load_orbax(user: str) -> Any:
    """`orbax.checkpoint`, imported; `user` names who needs it, for the message.

    Raises:
        ImportError: orbax-checkpoint is not installed.
    """
    try:
        import orbax.checkpoint as ocp  # type: ignore[import-untyped, unused-ignore]
    except ImportError as error:
        raise ImportError(
            f"{user} stores its backups with Orbax (orbax-checkpoint), which is not "
            f"installed in this environment ({error}). Install kdist's backup extra: "
            f"{INSTALL} (or pip install orbax-checkpoint)."
        ) from error
    return ocp


def key_of(group: str, position: int) -> str:
    """The entry of a variable in the checkpoint: "trainable_00003"."""
    return f"{group}_{position:05d}"


class ArrayWriter:
    """Writes one backup's arrays at a time, in the background."""

    def __init__(self, user: str) -> None:
        ocp = load_orbax(user)
        self._ocp = ocp
        # A registry of its own, so that no other Orbax user in the process is changed.
        handler = ocp.type_handlers.ArrayHandler(use_replica_parallel=False)
        registry = ocp.type_handlers.create_type_handler_registry(
            (_jax_backend.array_type(), handler)
        )
        self._checkpointer = ocp.AsyncCheckpointer(
            ocp.PyTreeCheckpointHandler(type_handler_registry=registry, use_compression=False)
        )

    def start(self, directory: Path, values: Mapping[str, Any]) -> None:
        """Starts writing `values` (key -> jax.Array) into `directory / STATE`; returns
        once Orbax holds them on the host (the write goes on in the background)."""
        self._checkpointer.save(directory / STATE, args=self._ocp.args.PyTreeSave(dict(values)))

    def wait(self) -> None:
        """Returns once the write `start` began is complete in every process (raises what
        it raised)."""
        self._checkpointer.wait_until_finished()

    def close(self) -> None:
        self._checkpointer.close()


def restore(directory: Path, targets: Mapping[str, Any], user: str) -> dict[str, Any]:
    """The arrays of the backup in `directory`, each restored onto the sharding of its
    target (key -> a jax.Array whose shape, dtype and sharding the restored one takes).
    Only the keys of `targets` are read (`kdist.load_backup` reads the weights alone).

    Raises:
        OSError: the backup's arrays cannot be read.
    """
    ocp = load_orbax(user)
    abstract = {
        key: _jax_backend.abstract_array(value.shape, value.dtype, value.sharding)
        for key, value in targets.items()
    }
    args = ocp.args.PyTreeRestore(
        item=abstract,
        restore_args=ocp.checkpoint_utils.construct_restore_args(abstract),
        partial_restore=True,
    )
    # Orbax's handler itself, not a Checkpointer: a Checkpointer's restore ends at a barrier
    # of every process, which a process whose read failed would never reach (the others
    # would wait there for its timeout); kdist's processes agree on the outcome instead
    # (choosing.py). The folder is complete: kdist commits a backup only once Orbax
    # finalized it.
    handler = ocp.PyTreeCheckpointHandler()
    try:
        restored: dict[str, Any] = handler.restore(directory / STATE, args=args)
    except Exception as error:  # Orbax raises ValueError, FileNotFoundError, its own errors
        said = str(error).split(" [tensorstore_spec", 1)[0]  # TensorStore's specs: long
        said = said if len(said) <= 600 else said[:597] + "..."
        raise OSError(f"{directory / STATE}: Orbax cannot read it ({said})") from error
    finally:
        handler.close()
    return restored
