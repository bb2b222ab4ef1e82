"""A 2-process job whose process 1 raises; process 0 waits in a barrier meanwhile.

argv[1], how process 1 fails:
- "jax": JAX's own TypeError, raised through JAX's traceback filter (which adds its
  "For simplicity, JAX has removed its internal frames ..." note);
- "note": a ValueError with a note of the program's own (`add_note`);
- "chained": a RuntimeError raised from a KeyError (`raise ... from ...`);
- "before": JAX's TypeError before kdist.initialize() (no liveness channel yet: the
  launcher's summary names it from the traceback).
"""

import os
import sys

import jax
import jax.numpy as jnp

import kdist


def fail(how: str) -> None:
    if how in ("jax", "before"):
        jax.jit(lambda x: x.reshape(3))(jnp.ones(2))
    if how == "note":
        error = ValueError("the batch has 3 rows, expected 4")
        error.add_note("see the docs")
        raise error
    if how == "chained":
        try:
            {}["learning_rate"]
        except KeyError as missing:
            raise RuntimeError("the optimizer has no learning rate") from missing


how = sys.argv[1]
if how == "before" and os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID") == "1":
    fail(how)
kdist.initialize()
if jax.process_index() == 1:
    fail(how)
kdist.barrier("never-reached-by-process-1", timeout=120)
