"""One process of a benchmark job in which one process meets a fault after the start.

usage: _fault_member.py TOOL COORDINATOR NUM_PROCESSES PROCESS_ID FAULT FAULTY

TOOL is kdist (kdist.initialize) or jax (jax.distributed.initialize). Every process
joins one collective (the job runs), then process FAULTY prints {"fault_at": ...}
(time.time()) and raises an uncaught RuntimeError (FAULT "exception") or SIGKILLs
itself (FAULT "sigkill"), while the others wait for it in a second collective.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> None:
    tool, coordinator, n_text, pid_text, fault, faulty_text = sys.argv[1:7]
    n, pid, faulty = int(n_text), int(pid_text), int(faulty_text)
    if tool == "kdist":
        import kdist

        kdist.initialize(coordinator, n, pid, timeout=60)
    else:
        import jax

        jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=n,
            process_id=pid,
            initialization_timeout=60,
        )
    import numpy as np
    from jax.experimental import multihost_utils

    multihost_utils.process_allgather(np.array([pid]))
    if pid == faulty:
        print(json.dumps({"fault_at": time.time()}), flush=True)
        if fault == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError("injected failure")
    multihost_utils.process_allgather(np.array([pid + 100]))  # never completes


if __name__ == "__main__":
    main()
