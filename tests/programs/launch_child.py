"""A process for `kdist launch` tests: reports itself as one JSON line, then does what
argv[1] says. SIGTERM and SIGINT make it print "got <SIGNAL>" and exit 0, so a test can
tell a forwarded signal from a kill."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

process_id = int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"])
mode = sys.argv[1]
marker_dir = Path(os.environ["LAUNCH_TEST_DIR"])  # the test's own folder, never the cwd


def on_signal(signum: int, _frame: object) -> None:
    print(f"got {signal.Signals(signum).name}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

report = {
    "process_id": process_id,
    "pid": os.getpid(),
    "env": {
        name: os.environ.get(name)
        for name in (
            "KERAS_DISTRIBUTION_JOB_ADDRESSES",
            "KERAS_DISTRIBUTION_NUM_PROCESSES",
            "KERAS_DISTRIBUTION_PROCESS_ID",
            "JAX_PLATFORMS",
            "JAX_NUM_CPU_DEVICES",
        )
    },
    # The variables the test names in LAUNCH_TEST_REPORT (comma-separated), as this
    # process got them (None: not inherited).
    "asked": {
        name: os.environ.get(name)
        for name in os.environ.get("LAUNCH_TEST_REPORT", "").split(",")
        if name
    },
}
if mode == "grandchild" and process_id == 0:
    # A child of its own that ignores SIGTERM: only the launcher's group kill ends it.
    grandchild = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)",
        ]
    )
    report["grandchild_pid"] = grandchild.pid
print(json.dumps(report), flush=True)
print(f"stderr line of process {process_id}", file=sys.stderr, flush=True)
(marker_dir / f"ready-{process_id}").touch()

if mode == "exit":
    sys.exit(0)
if mode == "partial":
    sys.stdout.write(f"no newline from {process_id}")
    sys.exit(0)
if mode in ("fail", "grandchild") and process_id == 1:
    deadline = time.monotonic() + 60
    while not (marker_dir / "ready-0").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    sys.exit(3)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(0)
