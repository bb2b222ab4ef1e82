"""KerasHub's layout maps on kdist's mesh, across two real processes.

KerasHub's LLM backbones ship `get_layout_map(device_mesh, ...)`, which checks
`isinstance(device_mesh, keras.distribution.DeviceMesh)` and returns a Keras LayoutMap.
Here a `kdist.DeviceMesh` goes in, and what comes out goes straight into
`kdist.ModelParallel`: two processes x two CPU devices on loopback (real
jax.distributed, started by kdist.initialize()), a (2, 2) batch x model mesh, a tiny
backbone of each family built from a small config (no weights are downloaded), two
training steps (`fit_families` below, run in each process by kdist.testing.run_job). In the
same run each process trains the same model under Keras's own DeviceMesh and ModelParallel:
the losses and every variable's layout and local shard shapes must be Keras's.

keras-hub depends on TensorFlow through tensorflow-text, but importing it and building
backbones needs neither: scripts/test.sh installs it with `--no-deps` and the two light
dependencies its import needs. Where it is not installed, these tests skip, saying so.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

import kdist
from helpers.support import NEEDS_KERAS, clean_env, run_python
from kdist.testing import run_job

pytestmark = [
    pytest.mark.multiprocess,
    NEEDS_KERAS,
    pytest.mark.skipif(
        importlib.util.find_spec("keras_hub") is None,
        reason="keras-hub is not installed (scripts/test.sh installs it: pip install --no-deps "
        "keras-hub regex tokenizers)",
    ),
]

# Every KerasHub backbone class that has get_layout_map (keras-hub 0.32). Qwen2Backbone is
# another name of QwenBackbone, checked as such.
FAMILIES = [
    "GemmaBackbone",
    "LlamaBackbone",
    "Llama3Backbone",
    "QwenBackbone",
    "QwenMoeBackbone",
    "Qwen3MoeBackbone",
]
# Seconds for the whole 2-process job: two KerasHub imports and 2 x 6 small models
# compiled on two cores (about 4 minutes on the 2-core machines).
JOB_TIMEOUT = 540


SEED = 1234
VOCABULARY = 64
SEQUENCE = 8
LOCAL_BATCH = 2
ATTENTION = {"num_layers": 2, "num_query_heads": 2, "num_key_value_heads": 2, "hidden_dim": 16}
CONFIGS: dict[str, dict[str, int]] = {
    "GemmaBackbone": {**ATTENTION, "intermediate_dim": 32, "head_dim": 8},
    "LlamaBackbone": {**ATTENTION, "intermediate_dim": 32},
    "Llama3Backbone": {**ATTENTION, "intermediate_dim": 32},
    "QwenBackbone": {**ATTENTION, "intermediate_dim": 32},
    "QwenMoeBackbone": {
        **ATTENTION,
        "intermediate_dim": 32,
        "moe_intermediate_dim": 16,
        "shared_expert_intermediate_dim": 16,
        "num_experts": 4,
        "top_k": 2,
    },
    "Qwen3MoeBackbone": {
        **ATTENTION,
        "intermediate_dim": 32,
        "moe_intermediate_dim": 16,
        "num_experts": 4,
        "top_k": 2,
        "head_dim": 8,
    },
}


def distribution_for(family: Any, side: str, num_processes: int) -> Any:
    """Keras's own ModelParallel over a Keras mesh ("keras"), or kdist's over a kdist mesh
    given to the same get_layout_map ("kdist"); a (2, num_processes) batch x model mesh."""
    import keras

    if side == "keras":
        mesh = keras.distribution.DeviceMesh(
            (2, num_processes), ["batch", "model"], keras.distribution.list_devices()
        )
        layout_map = family.get_layout_map(
            mesh, model_parallel_dim_name="model", data_parallel_dim_name="batch"
        )
        return keras.distribution.ModelParallel(
            layout_map=layout_map, batch_dim_name="batch", auto_shard_dataset=False
        )
    mesh = kdist.DeviceMesh((2, num_processes), ("batch", "model"))
    assert isinstance(mesh, keras.distribution.DeviceMesh), type(mesh)
    layout_map = family.get_layout_map(
        mesh, model_parallel_dim_name="model", data_parallel_dim_name="batch"
    )
    assert isinstance(layout_map, keras.distribution.LayoutMap), type(layout_map)
    strategy = kdist.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
    assert strategy.device_mesh is mesh
    return strategy


def train_family(name: str, side: str, x: dict[str, Any], y: Any) -> dict[str, Any]:
    """Builds a tiny backbone of `name` with a next-token head, trains two steps; the
    losses and every variable's PartitionSpec and local shard shapes."""
    import keras
    import keras_hub

    spec = kdist.cluster_spec()
    assert spec is not None
    family = getattr(keras_hub.models, name)
    strategy = distribution_for(family, side, spec.num_processes)
    keras.backend.clear_session()  # the same layer names (so variable paths) on both sides
    keras.utils.set_random_seed(SEED)
    with strategy.scope():
        backbone = family(vocabulary_size=VOCABULARY, **CONFIGS[name])
        inputs = {
            "token_ids": keras.Input((None,), dtype="int32", name="token_ids"),
            "padding_mask": keras.Input((None,), dtype="int32", name="padding_mask"),
        }
        logits = backbone.token_embedding(backbone(inputs), reverse=True)
        model = keras.Model(inputs, logits)
        model.compile(
            optimizer=keras.optimizers.SGD(0.1),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        losses = [float(model.train_on_batch(x, y)) for _ in range(2)]
    shards = {
        variable.path: {
            "spec": [str(axis) for axis in variable.value.sharding.spec],
            "local_shards": sorted(
                list(shard.data.shape) for shard in variable.value.addressable_shards
            ),
        }
        for variable in model.weights
    }
    return {"losses": losses, "shards": shards}


def fit_families(names: list[str]) -> dict[str, Any]:
    """Each family, Keras's way then kdist's, on this process's rows of one global batch."""
    spec = kdist.cluster_spec()
    assert spec is not None
    process_id, num_processes = spec.process_id, spec.num_processes
    # One global batch of token ids; each process feeds its own rows.
    rng = np.random.default_rng(7)
    tokens = rng.integers(1, VOCABULARY, size=(LOCAL_BATCH * num_processes, SEQUENCE + 1))
    mine = slice(process_id * LOCAL_BATCH, (process_id + 1) * LOCAL_BATCH)
    x = {
        "token_ids": tokens[mine, :-1].astype("int32"),
        "padding_mask": np.ones((LOCAL_BATCH, SEQUENCE), dtype="int32"),
    }
    y = tokens[mine, 1:].astype("int32")
    report: dict[str, Any] = {"process_id": process_id, "families": {}}
    for name in names:
        report["families"][name] = {
            side: train_family(name, side, x, y) for side in ("keras", "kdist")
        }
        print(f"{name} done", flush=True)
    return report


@pytest.fixture(scope="module")
def reports() -> list[dict[str, Any]]:
    return run_job(
        fit_families,
        FAMILIES,
        num_processes=2,
        devices_per_process=2,
        timeout=JOB_TIMEOUT,
        env={"KERAS_BACKEND": "jax", "KERAS_HOME": "/tmp/kdist-test-keras-home"},
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_kdist_mesh_and_kerashub_layout_map_train_as_keras_does(
    reports: list[dict[str, Any]], family: str
) -> None:
    first, second = (report["families"][family] for report in reports)
    assert first["kdist"]["losses"] == second["kdist"]["losses"]  # one model, two processes
    for report in (first, second):
        ours, theirs = report["kdist"], report["keras"]
        assert len(ours["losses"]) == 2
        assert ours["losses"] == theirs["losses"]
        assert ours["shards"] == theirs["shards"]
    # The layout map did split the model: some kernels over "model", in local pieces.
    split = {
        path: shard for path, shard in first["kdist"]["shards"].items() if "model" in shard["spec"]
    }
    assert any(path.endswith("token_embedding/embeddings") for path in split), sorted(split)
    embedding = next(s for p, s in split.items() if p.endswith("token_embedding/embeddings"))
    assert embedding["spec"] == ["model", "batch"]
    assert embedding["local_shards"] == [[32, 8], [32, 8]]  # (64, 16) over the 2 x 2 mesh


def test_qwen2_backbone_is_qwen_backbone() -> None:
    """Qwen2Backbone is QwenBackbone under another name, so one run covers both."""
    finished = run_python(
        "import keras_hub; m = keras_hub.models; print(m.Qwen2Backbone is m.QwenBackbone)",
        env=clean_env(devices=1, KERAS_BACKEND="jax"),
        timeout=120,
    )
    assert finished.returncode == 0, finished.describe()
    assert finished.stdout.split() == ["True"]
