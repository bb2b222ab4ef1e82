"""One process of a benchmark cluster, for one tool: kdist, jax or keras.

usage: _cluster_member.py TOOL COORDINATOR NUM_PROCESSES PROCESS_ID TIMEOUT_S [--preimport-jax]

With --preimport-jax every tool has JAX imported before it is timed (kdist
otherwise imports JAX inside initialize(), overlapped with its roll call), so
"init_start" .. "init_end" is the coordination alone (kdist's initialize module is
loaded before the clock too, as jax.distributed is by `import jax`).

Prints one JSON line with wall-clock stamps (time.time(), comparable across
processes of one host): imported, init_start, init_end, ready (global device
list in hand), and the device count; for kdist also "phases", its
startup_timings() (seconds per phase of its initialize). On an exception it prints the exception's
class instead and exits 3, so the harness can tell an exception from a signal.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    tool, coordinator, n_text, pid_text, timeout_text = sys.argv[1:6]
    n, pid, timeout = int(n_text), int(pid_text), float(timeout_text)
    stamps: dict[str, object] = {"spawned_import": time.time()}
    if "--preimport-jax" in sys.argv[6:]:
        import jax  # the backend does not start on import
    try:
        if tool == "kdist":
            import kdist
            from kdist._start import initialize as _initialize

            # kdist loads its initialize() on first use (so that `import kdist` stays
            # cheap); load it here, as `import jax` loads jax.distributed, so that the
            # clock below times the coordination alone for every tool.
            initialize = kdist.initialize
            stamps["imported"] = time.time()
            stamps["init_start"] = time.time()
            initialize(coordinator, n, pid, timeout=timeout)
            stamps["init_end"] = time.time()
            stamps["phases"] = _initialize.startup_timings()
            devices = kdist.list_devices()
        elif tool == "jax":
            import jax  # the backend does not start on import

            stamps["imported"] = time.time()
            stamps["init_start"] = time.time()
            jax.distributed.initialize(
                coordinator_address=coordinator,
                num_processes=n,
                process_id=pid,
                initialization_timeout=max(1, int(timeout)),
            )
            stamps["init_end"] = time.time()
            devices = [f"{d.platform}:{d.id}" for d in jax.devices()]
        elif tool == "keras":
            import keras

            stamps["imported"] = time.time()
            stamps["init_start"] = time.time()
            keras.distribution.initialize(coordinator, n, pid)  # Keras has no timeout
            stamps["init_end"] = time.time()
            devices = keras.distribution.list_devices()
        else:
            raise SystemExit(f"unknown tool {tool!r}")
    except Exception as error:
        stamps["error"] = f"{type(error).__module__}.{type(error).__qualname__}"
        stamps["message"] = str(error)[:300]
        stamps["failed_at"] = time.time()
        print(json.dumps(stamps), flush=True)
        return 3
    stamps["ready"] = time.time()
    stamps["devices"] = len(devices)
    print(json.dumps(stamps), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
