"""A process for `kdist launch --max-restarts` tests: prints its attempt as one JSON line,
then does what argv[1] says on that attempt.

- "fail_first": process 1 raises on attempt 0; every process exits 0 on later attempts.
- "always_fail": process 1 raises on every attempt (a different line on each).
- "same_failure": process 1 raises the same error on every attempt.
- "stop_then_finish": a kdist job; on attempt 0 every process steps (kdist.should_stop)
  until the test signals one of them, on later attempts it exits 0 at once.
"""

import json
import os
import sys
import time

mode = sys.argv[1]
attempt = int(os.environ["KDIST_RESTART_COUNT"])
process_id = int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"])
print(
    json.dumps(
        {
            "process_id": process_id,
            "attempt": attempt,
            "address": os.environ["KERAS_DISTRIBUTION_JOB_ADDRESSES"],
        }
    ),
    flush=True,
)

if mode == "fail_first":
    if attempt == 0 and process_id == 1:
        raise RuntimeError("fails on attempt 0 only")
elif mode == "always_fail":
    if process_id == 1:
        time.sleep(0.2)
        raise RuntimeError(f"fails on every attempt (this is attempt {attempt})")
elif mode == "same_failure":
    if process_id == 1:
        time.sleep(0.2)
        raise RuntimeError("fails the same way on every attempt")
elif mode == "stop_then_finish":
    import kdist

    kdist.initialize()
    assert kdist.cluster_spec().restart_count == attempt, kdist.cluster_spec()
    if attempt == 0:
        ready = os.environ.get("RESTART_TEST_DIR")
        deadline = time.monotonic() + 120
        for step in range(10**9):
            if kdist.should_stop(step):
                print(f"stopped at step {step}", flush=True)
                break
            if step == 5 and ready:
                open(os.path.join(ready, f"stepping-{process_id}"), "w").close()
            assert time.monotonic() < deadline, "never asked to stop"
            time.sleep(0.01)
else:
    raise SystemExit(f"unknown mode {mode!r}")
