"""What a backup holds of a Keras model and of the job, and whether a backup fits this job.

The training state of a Keras model on JAX is four lists of variables, in the order of
the JAX trainer's own state: the trainable variables, the non-trainable ones (the seed
generators of Dropout and other random layers are among them), the optimizer's (its
iteration counter, learning rate and slots) and the metrics' (running totals and
counts). Each variable is known by its group and its position in it, as the trainer
knows it; its path is kept for messages.

A backup records each variable's path, shape and dtype, and (for messages) the job
that wrote it and each variable's layout. It loads into a job of any shape and layout
(each array is restored onto this job's own sharding of the variable), but only into
the same model: the same number of variables in each group, each with the same shape
and dtype; anything else is a `kdist.BackupMismatchError` that names the difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kdist import _jax_backend
from kdist._errors import BackupMismatchError

GROUPS = ("trainable", "non_trainable", "optimizer", "metrics")


@dataclass(frozen=True)
class Described:
    """One variable of the training state, as a backup records it."""

    group: str
    position: int  # in its group
    path: str
    shape: tuple[int, ...]
    dtype: str
    layout: str  # for messages: the PartitionSpec and mesh, or the sharding

    def to_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "position": self.position,
            "path": self.path,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "layout": self.layout,
        }

    @staticmethod
    def from_json(entry: Mapping[str, Any]) -> Described:
        return Described(
            group=str(entry["group"]),
            position=int(entry["position"]),
            path=str(entry["path"]),
            shape=tuple(int(n) for n in entry["shape"]),
            dtype=str(entry["dtype"]),
            layout=str(entry["layout"]),
        )

    @property
    def name(self) -> str:
        """How messages name it: "'dense/kernel' (trainable variable 0)"."""
        return f"{self.path!r} ({self.group} variable {self.position})"


def training_variables(model: Any, groups: Sequence[str] = GROUPS) -> list[tuple[str, int, Any]]:
    """(group, position, variable) of every variable of `model`'s training state, in the
    groups `groups` (all four by default)."""
    return [(group, i, v) for group in groups for i, v in enumerate(_variables(model, group))]


def _variables(model: Any, group: str) -> list[Any]:
    """The variables of one group of `model`'s training state."""
    if group == "trainable":
        return list(model.trainable_variables)
    if group == "non_trainable":
        return list(model.non_trainable_variables)
    if group == "optimizer":
        optimizer = getattr(model, "optimizer", None)
        return list(optimizer.variables) if optimizer is not None else []
    return list(model.metrics_variables)


def describe(group: str, position: int, variable: Any) -> Described:
    """The record of one variable, from its current value (a `jax.Array`)."""
    value = variable.value
    shape = tuple(int(n) for n in value.shape)
    return Described(
        group=group,
        position=position,
        path=str(getattr(variable, "path", "") or getattr(variable, "name", "")),
        shape=shape,
        dtype=str(value.dtype),
        layout=describe_sharding(value.sharding),
    )


def describe_sharding(sharding: Any) -> str:
    """A sharding in a few words: "PartitionSpec(None, 'model') on the mesh
    {'batch': 2, 'model': 2}", or its kind and devices."""
    mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
    if mesh is not None and spec is not None:
        axes = {str(name): int(size) for name, size in dict(mesh.shape).items()}
        parts = ", ".join(repr(part) for part in tuple(spec))
        return f"PartitionSpec({parts}) on the mesh {axes}"
    devices = sorted(f"{d.platform}:{d.id}" for d in sharding.device_set)
    return f"{type(sharding).__name__} on {devices}"


# --- the job ---------------------------------------------------------------------------


def this_job() -> dict[str, object]:
    """The job's size as a backup records it: the process count and every device."""
    devices = _jax_backend.job_devices()
    processes = 1 + max((process for _, process, _ in devices), default=0)
    return {"num_processes": processes, "devices": [list(d) for d in devices]}


def job_in_words(job: Mapping[str, Any]) -> str:
    """ "2 processes x 2 cpu devices" (or the devices per process when they differ)."""
    processes = int(job["num_processes"])
    per_process: dict[int, int] = {}
    platforms = sorted({str(d[2]) for d in job["devices"]})
    for _, process, _ in job["devices"]:
        per_process[int(process)] = per_process.get(int(process), 0) + 1
    counts = sorted(set(per_process.values()))
    kind = "/".join(platforms)
    noun = "process" if processes == 1 else "processes"
    if len(counts) == 1:
        return f"{processes} {noun} x {counts[0]} {kind} device{'s' if counts[0] != 1 else ''}"
    return f"{processes} {noun} with {sorted(per_process.items())} {kind} devices"


# What to do about a backup of another model, as the callback says it.
RESTORE_OR_START_AFRESH = (
    "restore it into the model that wrote it, or start from scratch by removing the backup "
    "directory (or giving another backup_dir)."
)


def check_variables(
    saved: Sequence[Described],
    current: Sequence[Described],
    where: str,
    *,
    groups: Sequence[str] = GROUPS,
    advice: str = RESTORE_OR_START_AFRESH,
) -> None:
    """Raises kdist.BackupMismatchError unless every variable of `current` has its
    counterpart in `saved`, with the same shape and dtype (its layout may differ), in each
    group of `groups`; `advice` says what to do about it."""
    for group in groups:
        had = sum(1 for d in saved if d.group == group)
        has = sum(1 for d in current if d.group == group)
        if had != has:
            raise BackupMismatchError(
                f"{where} holds {had} {group} variables; this model has {has}. The backup "
                f"was written for another model (or optimizer, or metrics): {advice}"
            )
    by_key = {(d.group, d.position): d for d in saved}
    for now in current:
        then = by_key[(now.group, now.position)]
        if then.shape != now.shape or then.dtype != now.dtype:
            raise BackupMismatchError(
                f"{where}: {then.name} was saved as {then.dtype}{list(then.shape)}; this "
                f"model's {now.name} is {now.dtype}{list(now.shape)}. The backup was "
                f"written for another model: {advice}"
            )
