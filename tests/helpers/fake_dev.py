"""A machine's device list made, not mocked: a private mount namespace (`unshare -m`,
as root) whose /dev is a tmpfs holding the usual character devices and the accelerator
nodes a test asks for (nvidia0..N-1, accel0..N-1). Nothing outside the namespace sees it;
it ends with the command."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

_SETUP = """
set -e
mount -t tmpfs -o mode=755 kdist-test-dev /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8
mknod -m 666 /dev/urandom c 1 9
mknod -m 666 /dev/tty c 5 0
mkdir /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 kdist-test-shm /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
i=0
while [ "$i" -lt "$KDIST_TEST_NVIDIA" ]; do mknod -m 666 /dev/nvidia$i c 195 $i; i=$((i+1)); done
if [ "$KDIST_TEST_NVIDIA" -gt 0 ]; then mknod -m 666 /dev/nvidiactl c 195 255; fi
i=0
while [ "$i" -lt "$KDIST_TEST_ACCEL" ]; do mknod -m 666 /dev/accel$i c 121 $i; i=$((i+1)); done
unset KDIST_TEST_NVIDIA KDIST_TEST_ACCEL
exec "$@"
"""


def available() -> str | None:
    """None when private mount namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (unshare -m, mount, mknod)"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux)"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return f"unshare -m fails here: {probe.stderr.decode(errors='replace').strip()}"
    return None


def in_fake_dev(command: Sequence[str]) -> list[str]:
    """`command` run in its own mount namespace with the fake /dev; the numbers of nodes
    come from the environment: KDIST_TEST_NVIDIA and KDIST_TEST_ACCEL (see `dev_env`)."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", _SETUP, "sh", *command]


def dev_env(nvidia: int = 0, accel: int = 0) -> dict[str, str]:
    """The variables `in_fake_dev` reads: how many nvidiaN and accelN nodes to make."""
    return {"KDIST_TEST_NVIDIA": str(nvidia), "KDIST_TEST_ACCEL": str(accel)}
