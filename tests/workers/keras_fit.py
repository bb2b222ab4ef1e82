"""A cluster member that trains a small Keras model (JAX backend) and reports it.

Usage: keras_fit.py SCENARIO [SEED]. The scenarios differ only in how the job
starts and which distribution places the model:

- keras_dp:         kdist.initialize(), then Keras's own DataParallel
- keras_dp_late:    the same, with Keras imported only after kdist.initialize()
- kdist_set:        kdist.set_distribution(kdist.DataParallel())
- kdist_scope:      with kdist.DataParallel().scope(): build and fit
- kdist_mp:         kdist.ModelParallel with the Dense kernels split on "model"
- keras_reference:  keras.distribution.initialize() and Keras's DataParallel (no kdist)

With SEED, the program calls keras.utils.set_random_seed(SEED) first. Each process
trains on its own half of one global data set, then prints one JSON line.
"""

import hashlib
import json
import sys

import jax
import numpy as np

scenario = sys.argv[1]
user_seed = int(sys.argv[2]) if len(sys.argv) > 2 else None
late_import = scenario == "keras_dp_late"

if not late_import:
    import keras

    if user_seed is not None:
        keras.utils.set_random_seed(user_seed)

if scenario == "keras_reference":
    keras.distribution.initialize()
    keras_after_initialize = True
else:
    import kdist

    kdist.initialize()
    keras_after_initialize = "keras" in sys.modules
    if late_import:
        import keras

process_id, num_processes = jax.process_index(), jax.process_count()

# One global data set; each process feeds its own contiguous half, batch by batch.
rows = 32
features = np.linspace(-1.0, 1.0, rows * 4, dtype="float32").reshape(rows, 4)
targets = (features @ np.array([[0.5], [-1.0], [2.0], [0.25]], dtype="float32")) + 0.1
mine = slice(process_id * rows // num_processes, (process_id + 1) * rows // num_processes)


def build() -> "keras.Model":
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8, activation="relu", name="dense_in"),
            keras.layers.Dense(1, name="dense_out"),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


def fit(model: "keras.Model") -> list[float]:
    """Trains, then evaluates (under the same distribution): the epoch losses, then the
    evaluation's loss."""
    history = model.fit(
        features[mine], targets[mine], batch_size=4, epochs=3, shuffle=False, verbose=0
    )
    evaluated = model.evaluate(features[mine], targets[mine], batch_size=4, verbose=0)
    return [float(loss) for loss in history.history["loss"]] + [float(evaluated)]


keras_distribution_type = None


def keras_view_of(strategy: "kdist.Distribution") -> str:
    """Which public Keras class Keras's current distribution is, when it presents `strategy`."""
    current = keras.distribution.distribution()
    assert current.kdist_distribution is strategy, current
    for name in ("ModelParallel", "DataParallel"):
        if isinstance(current, getattr(keras.distribution, name)):
            return name
    return type(current).__name__


if scenario in ("keras_dp", "keras_dp_late", "keras_reference"):
    keras.distribution.set_distribution(keras.distribution.DataParallel(auto_shard_dataset=False))
    model = build()
    losses = fit(model)
elif scenario == "kdist_set":
    strategy = kdist.DataParallel()
    kdist.set_distribution(strategy)
    keras_distribution_type = keras_view_of(strategy)
    model = build()
    losses = fit(model)
elif scenario == "kdist_scope":
    with kdist.DataParallel().scope() as strategy:
        keras_distribution_type = keras_view_of(strategy)
        model = build()
        losses = fit(model)
    assert keras.distribution.distribution() is None
elif scenario == "kdist_mp":
    mesh = kdist.DeviceMesh((2, 2), ("batch", "model"))
    layout_map = kdist.LayoutMap(mesh)
    layout_map[".*/dense_in/kernel"] = (None, "model")
    layout_map[".*/dense_out/kernel"] = ("model", None)
    strategy = kdist.ModelParallel(layout_map=layout_map)
    kdist.set_distribution(strategy)
    keras_distribution_type = keras_view_of(strategy)
    model = build()
    losses = fit(model)
else:
    raise SystemExit(f"unknown scenario {scenario!r}")

*losses, evaluate_loss = losses
kernel = model.get_layer("dense_in").kernel.value
replicated = {}
for variable in model.weights:
    value = variable.value
    if value.is_fully_replicated:
        replicated[variable.path] = hashlib.sha256(np.asarray(value).tobytes()).hexdigest()

report = {
    "process_id": process_id,
    "scenario": scenario,
    "losses": losses,
    "evaluate_loss": evaluate_loss,
    "replicated_weights": replicated,
    "kernel_devices": len(kernel.sharding.device_set),
    "kernel_spec": [str(axis) for axis in kernel.sharding.spec],
    "kernel_local_shards": [list(shard.data.shape) for shard in kernel.addressable_shards],
    "keras_after_initialize": keras_after_initialize,
    "keras_distribution_type": keras_distribution_type,
}
if scenario != "keras_reference":
    spec = kdist.cluster_spec()
    report["seed"] = spec.seed
    report["seed_source"] = spec.sources["seed"]
print(json.dumps(report), flush=True)
