"""The liveness channel's TCP settings on its real sockets, for a given
KDIST_UNREACHABLE_TIMEOUT: keepalive and TCP_USER_TIMEOUT are what lets the kernel give a
vanished host up within that window (tests/hosts/test_netns_host_loss.py cuts a host's
link, as root, and waits for it). Here, in seconds and without root, a 2-process job on
loopback keeps its channel open while this test borrows each end's socket
(pidfd_getfd(2): a copy of the process's descriptor; the process's socket is untouched)
and reads the options the kernel holds for it, so a window sized from another setting
(JAX's 100 s heartbeat) or scaled on the way (three times the window) is caught where
the socket is, whichever layer did it.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers.support import PROGRAMS, Running, Spawned, clean_env, free_port

pytestmark = pytest.mark.multiprocess

JOB_SECONDS = 120  # bounds every wait; nothing is timed against it
# The window this test sets, and what the channel's sockets must then hold (as
# LivenessOptionsFor sizes them, cpp/core/liveness/liveness_connection.h): the kernel
# gives a silent peer up after 11 s (one probe interval before the window ends), probing
# after 3 s of silence (a quarter of the window), then every second (a tenth, whole
# seconds, at least 1), 8 probes where TCP_USER_TIMEOUT is unsupported.
WINDOW_SECONDS = 12
EXPECTED = {
    "SO_KEEPALIVE": 1,
    "TCP_USER_TIMEOUT": 11_000,  # milliseconds
    "TCP_KEEPIDLE": 3,
    "TCP_KEEPINTVL": 1,
    "TCP_KEEPCNT": 8,
}
_OPTIONS = {
    "SO_KEEPALIVE": (socket.SOL_SOCKET, socket.SO_KEEPALIVE),
    "TCP_USER_TIMEOUT": (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
    "TCP_KEEPIDLE": (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
    "TCP_KEEPINTVL": (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
    "TCP_KEEPCNT": (socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
}
_SYS_PIDFD_GETFD = 438  # the same number on every Linux architecture


def borrow(pid: int, fd: int) -> socket.socket | None:
    """A copy of process `pid`'s descriptor `fd` as a socket (None when `fd` is not one)."""
    if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        copy = libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0)
        if copy < 0:
            error = ctypes.get_errno()
            if error in (errno.ENOSYS, errno.EPERM):
                pytest.skip(f"pidfd_getfd(2) on a child process: {os.strerror(error)}")
            raise OSError(error, f"pidfd_getfd({pid}, {fd}): {os.strerror(error)}")
    finally:
        os.close(pidfd)
    return socket.socket(fileno=copy)


def tcp_connections(pid: int) -> Iterator[tuple[socket.socket, int, int]]:
    """Each connected TCP socket of process `pid`: (a copy of it, its local port, its peer's
    port). The caller closes nothing: each copy is closed when the next is made."""
    for name in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        try:
            borrowed = borrow(pid, int(name))
        except FileNotFoundError:  # closed meanwhile
            continue
        if borrowed is None:
            continue
        with borrowed:
            if borrowed.type != socket.SOCK_STREAM or borrowed.family not in (
                socket.AF_INET,
                socket.AF_INET6,
            ):
                continue
            try:
                peer = borrowed.getpeername()
            except OSError:  # a listener, or not connected
                continue
            yield borrowed, borrowed.getsockname()[1], peer[1]


def options_of(borrowed: socket.socket) -> dict[str, int]:
    return {name: borrowed.getsockopt(*level_name) for name, level_name in _OPTIONS.items()}


def channel_options(pid: int, hub_port: int, hub_side: bool) -> list[dict[str, int]]:
    """The options of each liveness connection of process `pid`: its sockets on the hub's
    port (process 0, hub_side) or connected to it (another process)."""
    return [
        options_of(borrowed)
        for borrowed, local, peer in tcp_connections(pid)
        if (local if hub_side else peer) == hub_port
    ]


@contextmanager
def open_channel(tmp_path: Path, **env: str) -> Iterator[tuple[list[Running], int]]:
    """A 2-process job on loopback (tests/programs/channel_sockets.py) with `env`, held
    with its channel open: yields its processes and the hub's port; then lets them shut
    down (or kills them)."""
    release = tmp_path / "release"
    port = free_port()
    with Spawned(tmp_path) as spawned:
        processes = [
            spawned.start(
                [sys.executable, str(PROGRAMS / "channel_sockets.py")],
                clean_env(
                    1,
                    KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                    KERAS_DISTRIBUTION_NUM_PROCESSES="2",
                    KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
                    KDIST_INIT_TIMEOUT=str(JOB_SECONDS // 2),
                    CHANNEL_SOCKETS_RELEASE=str(release),
                    CHANNEL_SOCKETS_WAIT=str(JOB_SECONDS),
                    **env,
                ),
            )
            for process_id in range(2)
        ]
        deadline = time.monotonic() + JOB_SECONDS
        while not all(p.stdout().startswith("{") for p in processes):
            ended = [p for p in processes if p.proc.poll() is not None]
            if ended or time.monotonic() > deadline:
                described = [p.finish(1).describe() for p in processes]
                pytest.fail("the job did not start:\n" + "\n".join(described))
            time.sleep(0.05)
        hub_port = json.loads(processes[0].stdout().splitlines()[0])["hub_port"]
        assert isinstance(hub_port, int) and hub_port > 0, processes[0].stdout()
        try:
            yield processes, hub_port
        finally:
            release.touch()
            for process in processes:
                finished = process.finish(JOB_SECONDS)
                assert finished.returncode == 0, finished.describe()


def test_the_channel_s_sockets_hold_the_window_set_by_kdist_unreachable_timeout(
    tmp_path: Path,
) -> None:
    """KDIST_UNREACHABLE_TIMEOUT=12: both ends of the one connection (process 0's hub,
    process 1's spoke) hold keepalive and TCP_USER_TIMEOUT sized from 12 s, not from
    JAX's heartbeat (100 s) nor from any other multiple of the window."""
    with open_channel(tmp_path, KDIST_UNREACHABLE_TIMEOUT=str(WINDOW_SECONDS)) as (
        processes,
        hub_port,
    ):
        hub_ends = channel_options(processes[0].pid, hub_port, hub_side=True)
        spoke_ends = channel_options(processes[1].pid, hub_port, hub_side=False)
    assert len(hub_ends) == 1, f"process 0's connections on the hub's port: {hub_ends}"
    assert len(spoke_ends) == 1, f"process 1's connections to the hub: {spoke_ends}"
    for side, options in (("hub", hub_ends[0]), ("spoke", spoke_ends[0])):
        gives_up = options["TCP_USER_TIMEOUT"] / 1000
        assert options == EXPECTED, (
            f"the {side}'s socket: {options}; the kernel would give a silent peer up "
            f"after {gives_up:g} s, for a window of {WINDOW_SECONDS} s "
            f"(KDIST_UNREACHABLE_TIMEOUT); expected {EXPECTED}"
        )
