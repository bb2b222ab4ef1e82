"""A member of the liveness sockets' test job (tests/together/test_channel_sockets.py):
kdist.initialize(), then one JSON line (its process id and, in process 0, the port its
liveness hub listens on), then it waits, with its channel open, until the file named by
CHANNEL_SOCKETS_RELEASE exists (at most CHANNEL_SOCKETS_WAIT seconds), and shuts down.
"""

import json
import os
import time
from pathlib import Path

import kdist
from kdist._together import leaving

RELEASE = Path(os.environ["CHANNEL_SOCKETS_RELEASE"])
WAIT_SECONDS = float(os.environ.get("CHANNEL_SOCKETS_WAIT", "120"))

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
installed = leaving._installed
assert installed is not None, "this process is not on the liveness channel"
report = {"process_id": spec.process_id, "hub_port": installed.channel.port or None}
print(json.dumps(report), flush=True)
deadline = time.monotonic() + WAIT_SECONDS
while not RELEASE.exists() and time.monotonic() < deadline:
    time.sleep(0.02)
kdist.shutdown()
