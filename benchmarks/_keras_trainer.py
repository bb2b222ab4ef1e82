"""One process of a Keras training job, started through kdist or through Keras.

usage: _keras_trainer.py TOOL COORDINATOR NUM_PROCESSES PROCESS_ID

TOOL is "kdist" (kdist.initialize + kdist.set_distribution(kdist.DataParallel()))
or "keras" (keras.distribution.initialize + Keras's DataParallel). Both import
Keras first, build the same small model and run one training step on this
process's part of the global batch. Prints one JSON line of time.time() stamps:
imported (Keras), init_start, init_end, built (distribution set, model built and
compiled), first_step (the first train_on_batch returned).
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    tool, coordinator, n_text, pid_text = sys.argv[1:5]
    n, pid = int(n_text), int(pid_text)
    stamps: dict[str, object] = {}
    import keras
    import numpy as np

    stamps["imported"] = time.time()
    stamps["init_start"] = time.time()
    if tool == "kdist":
        import kdist

        kdist.initialize(coordinator, n, pid, timeout=60)
        stamps["init_end"] = time.time()
        kdist.set_distribution(kdist.DataParallel())
    elif tool == "keras":
        keras.distribution.initialize(coordinator, n, pid)
        stamps["init_end"] = time.time()
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(auto_shard_dataset=False)
        )
    else:
        raise SystemExit(f"unknown tool {tool!r}")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    stamps["built"] = time.time()
    x = np.ones((8, 16), dtype="float32") * (pid + 1)
    loss = model.train_on_batch(x, np.ones((8, 1), dtype="float32"))
    stamps["first_step"] = time.time()
    stamps["loss"] = float(np.asarray(loss))
    print(json.dumps(stamps), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
