"""A process of `kdist launch --nodes` for the operator's view (tests/agent/test_status.py):
it steps (kdist.should_stop each WATCH_STEP_SECONDS) to WATCH_STEPS, writing each step with
its wall-clock time to WATCH_DIR/steps-<attempt>-<process id>.txt; in attempt 0, process 1
raises at step WATCH_FAIL_AT (the job restarts from step 0: those steps are recomputed)."""

import os
import time

import kdist

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
attempt = int(os.environ["KDIST_RESTART_COUNT"])
fail_at = int(os.environ["WATCH_FAIL_AT"])
pause = float(os.environ.get("WATCH_STEP_SECONDS", "0.05"))
path = os.path.join(os.environ["WATCH_DIR"], f"steps-{attempt}-{spec.process_id}.txt")
with open(path, "a", buffering=1) as out:
    for step in range(int(os.environ["WATCH_STEPS"])):
        if kdist.should_stop(step):
            break
        out.write(f"{step} {time.time()}\n")
        if attempt == 0 and spec.process_id == 1 and step == fail_at:
            raise RuntimeError(f"watch_job: failing on purpose at step {step}")
        time.sleep(pause)
