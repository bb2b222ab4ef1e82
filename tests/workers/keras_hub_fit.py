"""A cluster member that shards tiny KerasHub backbones with their own layout maps.

Usage: keras_hub_fit.py FAMILY [FAMILY ...] (class names of keras_hub.models, such as
GemmaBackbone). For each family, twice with the same seed and the same data:

- keras: keras.distribution.DeviceMesh, the backbone's get_layout_map and Keras's own
  ModelParallel (Keras alone, as KerasHub documents it);
- kdist: kdist.DeviceMesh given to the same get_layout_map (what KerasHub returns, a
  Keras LayoutMap on that mesh, goes straight into kdist.ModelParallel).

Each builds a backbone from a small config (no weights are downloaded), puts a
next-token head on it and trains two steps on this process's half of one global batch,
then reports the losses and every variable's PartitionSpec and local shard shapes. The
job starts with kdist.initialize(); the mesh is (2, 2) batch x model over the 2 x 2
devices. Prints one JSON line.
"""

import json
import sys

import keras
import keras_hub
import numpy as np

import kdist

SEED = 1234
VOCABULARY = 64
SEQUENCE = 8
LOCAL_BATCH = 2
ATTENTION = {"num_layers": 2, "num_query_heads": 2, "num_key_value_heads": 2, "hidden_dim": 16}
CONFIGS = {
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

kdist.initialize()
spec = kdist.cluster_spec()
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


def distribution_for(family: type, side: str) -> object:
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


def train(name: str, side: str) -> dict[str, object]:
    family = getattr(keras_hub.models, name)
    strategy = distribution_for(family, side)
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


report: dict[str, object] = {"process_id": process_id, "families": {}}
for name in sys.argv[1:]:
    report["families"][name] = {side: train(name, side) for side in ("keras", "kdist")}  # type: ignore[index]
    print(f"[{process_id}] {name} done", file=sys.stderr, flush=True)
print(json.dumps(report), flush=True)
