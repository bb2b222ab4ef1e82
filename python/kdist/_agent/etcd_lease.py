"""An agent's lease in etcd (`--rendezvous etcd://`): granted for the unreachable window,
renewed by a thread that never dies, its loss told once."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from kdist import _errors
from kdist._agent.agent_log import AgentLog
from kdist._agent.etcd_client import EtcdClient, EtcdRefused, EtcdUnavailable

RETRY_SECONDS = 0.1  # between two tries of a call that etcd could not answer


class EtcdLease:
    """This agent's lease of `ttl` seconds, renewed every sixth of it by a thread that never
    dies (an etcd leader election, about a second, costs a few renewals, not the lease);
    `lost` is called once when etcd no longer has it or no majority answered for its TTL.
    Granting it is tried for the whole unreachable window (`window`)."""

    def __init__(
        self,
        client: EtcdClient,
        window: float,
        ttl: int,
        lost: Callable[[str], None],
        log: AgentLog,
    ) -> None:
        self.client = client
        self.window = window
        self.ttl = ttl
        self.id = 0
        self._lost = lost
        self._log = log
        self._last_ok = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="kdist-etcd-lease", daemon=True)

    def grant(self) -> None:
        """A lease of the window's TTL, tried for the window; CoordinatorUnreachableError
        naming the endpoints when etcd does not answer."""
        deadline = time.monotonic() + self.window
        reason = ""
        while True:
            try:
                self.id, _ttl = self.client.grant(self.ttl)
                break
            except (EtcdUnavailable, EtcdRefused) as error:
                reason = str(error)
                if isinstance(error, EtcdRefused) or time.monotonic() >= deadline:
                    raise _errors.CoordinatorUnreachableError(
                        f"etcd at {self.client.describe()} did not answer within "
                        f"{self.window:g} s (KDIST_UNREACHABLE_TIMEOUT): {reason}; start etcd "
                        "there, or check that this machine reaches a majority of its members"
                    ) from None
                time.sleep(RETRY_SECONDS)
        self._last_ok = time.monotonic()
        self._thread.start()

    def expires_by(self) -> float:
        """The monotonic time by which etcd has let the lease go unless renewed since."""
        return self._last_ok + self.ttl

    def describe(self) -> str:
        """How long etcd keeps it without renewal, and where that comes from."""
        return f"{self.ttl} s (the lease's TTL, from KDIST_UNREACHABLE_TIMEOUT={self.window:g} s)"

    def _renew(self) -> None:
        every = max(0.2, self.ttl / 6)
        period = every
        while not self._stop.wait(period):
            try:
                ttl = self.client.keepalive(self.id)
            except Exception as error:
                period = RETRY_SECONDS
                if time.monotonic() >= self.expires_by():
                    self._lost(
                        f"no answer from a majority of etcd ({self.client.describe()}) for "
                        f"{self.describe()}; last: {error}"
                    )
                    return
                continue
            if ttl <= 0:
                self._lost(
                    f"etcd ({self.client.describe()}) no longer has this agent's lease: it "
                    f"expired after {self.describe()} without renewal"
                )
                return
            self._last_ok = time.monotonic()
            period = every

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.client.call_timeout * len(self.client.endpoints) + 1)
        if self.id:
            with contextlib.suppress(EtcdUnavailable, EtcdRefused):
                self.client.revoke(self.id)  # its keys go with it
