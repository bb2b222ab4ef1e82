"""A backup folder holds one job at a time: the job that trains with it holds a lease there.

Two jobs writing one backup folder overwrite each other's backups, whatever brought them
there (each machine given a loopback rendezvous, two users, a stale script). So process 0 of
a job takes the folder's lease (`LEASE_FILE`: the job's run, host, pid, when it started and
when it was last refreshed) before the first step, refreshes it every `REFRESH_SECONDS`
while it trains, and gives it back at the end. A job that finds another job's lease,
refreshed within `EXPIRY_SECONDS` (and, on this host, held by a live process), is refused
before its first step with kdist.BackupStorageError naming the holder. The same job's next
attempt takes its own lease back (the run is the job's, not the attempt's); a lease left
by a job that is gone expires.

A job's run is `cluster_spec().run_id` (KDIST_RUN_ID: drawn by `kdist launch` and by the
nodes' rendezvous, the same in every attempt); a job started otherwise is named by its
coordinator address and job id.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kdist._errors import BackupStorageError

LEASE_FILE = ".kdist-lease.json"
REFRESH_SECONDS = 10.0
EXPIRY_SECONDS = 45.0  # a lease not refreshed for this long belongs to a job that is gone


@dataclass(frozen=True)
class Lease:
    """Who holds a backup folder."""

    run: str  # the job's run (cluster_spec().run_id), else its coordinator and job id
    host: str
    pid: int
    started: float  # Unix time
    refreshed: float  # Unix time

    def describe(self, now: float) -> str:
        ago = max(0.0, now - self.refreshed)
        return (
            f"job run {self.run!r} (process 0 on host {self.host}, pid {self.pid}; refreshed "
            f"{ago:.0f} s ago)"
        )


def this_run(run_id: str, coordinator: str | None, job_id: str) -> str:
    """This job's name in a lease: its run id, else its coordinator and job id.

    Example:
        >>> this_run("3fa2", "10.0.0.1:1234", ""), this_run("", "10.0.0.1:1234", "t1")
        ('3fa2', '10.0.0.1:1234 job t1')
    """
    if run_id:
        return run_id
    return f"{coordinator or 'no coordinator'}" + (f" job {job_id}" if job_id else "")


def read(root: Path) -> Lease | None:
    """The folder's lease, or None (none, or one that does not read)."""
    try:
        data = json.loads((root / LEASE_FILE).read_text())
        return Lease(
            str(data["run"]),
            str(data["host"]),
            int(data["pid"]),
            float(data["started"]),
            float(data["refreshed"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_live(lease: Lease, now: float) -> bool:
    """Whether `lease`'s job still holds it: refreshed within EXPIRY_SECONDS and, on this
    host, its process alive."""
    if now - lease.refreshed >= EXPIRY_SECONDS:
        return False
    if lease.host == socket.gethostname():
        try:
            os.kill(lease.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True


class LeaseHolder:
    """This job's lease of one backup folder: refreshed on a thread until released."""

    def __init__(self, root: Path, run: str) -> None:
        self.root = root
        now = time.time()
        self.lease = Lease(run, socket.gethostname(), os.getpid(), now, now)
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(
            target=self._refresh, name="kdist-backup-lease", daemon=True
        )
        self._thread.start()

    def release(self) -> None:
        """Stops refreshing and removes the lease when it is still this job's."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        held = read(self.root)
        if held is not None and (held.run, held.pid) == (self.lease.run, self.lease.pid):
            with contextlib.suppress(OSError):
                (self.root / LEASE_FILE).unlink()

    def _refresh(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            self.lease = Lease(**{**asdict(self.lease), "refreshed": time.time()})
            with contextlib.suppress(OSError):  # a failed save names the folder's trouble
                self._write()

    def _write(self) -> None:
        path = self.root / LEASE_FILE
        temporary = path.with_name(f"{LEASE_FILE}.{self.lease.pid}.tmp")
        temporary.write_text(json.dumps(asdict(self.lease)))
        os.replace(temporary, path)


def take(root: Path, run: str, user: str) -> LeaseHolder:
    """This job's lease of `root`; kdist.BackupStorageError naming the holder when another
    job holds it."""
    held = read(root)
    now = time.time()
    if held is not None and held.run != run and is_live(held, now):
        raise BackupStorageError(
            f"{user}: backup_dir {root} is held by another job that trains now: "
            f"{held.describe(now)}; this job is {run!r}. Two jobs writing one backup folder "
            "overwrite each other's backups, so this one does not start. If it should be that "
            "job, start its machines with one --rendezvous address they all reach (a "
            "loopback address makes each machine a job of its own); otherwise give it "
            f"another backup_dir. A lease of a job that is gone expires {EXPIRY_SECONDS:g} s "
            f"after its last refresh (or remove {root / LEASE_FILE})"
        )
    return LeaseHolder(root, run)
