"""After the start: opening this process's end of the liveness channel.

Process 0 listens for the others' liveness connections before its roll call (the core
draws the nonce and writes the port and nonce into what "go" carries); every other
process joins while JAX starts (process 0's end waits for processes that have not joined
yet, for at most JOIN_TIMEOUT_SECONDS after it finished). Where a process cannot open its
end, it says why once and the job runs on JAX's heartbeat alone.

What the channel does once open, and how this process leaves the job: `leaving`.
"""

from __future__ import annotations

import threading

from kdist import _core, _log
from kdist._errors import KdistError

_logger = _log.LOGGER
# How long another process tries to join process 0's hub before falling back.
JOIN_TIMEOUT_SECONDS = 5.0


def start_hub(
    spec: _core.ClusterSpec, shared: _core.JobShared, board: _core.StopBoard
) -> _core.LivenessChannel | None:
    """Process 0, before its roll call: listens for the others' liveness connections;
    the core draws the nonce and writes the port and nonce into `shared`, which "go"
    carries. `board`: this process's (stop signals, should_stop, barriers, the stall
    watchdog).

    Returns None (after logging why, once) where it cannot listen; the job then
    runs on JAX's heartbeat alone.
    """
    try:
        return _core.start_liveness_hub(spec, board, shared)
    except KdistError as error:
        _log_fallback(spec, f"process 0 cannot listen for it: {error}")
        return None


def join(
    spec: _core.ClusterSpec, roll_call: _core.WorkerResult, *, board: _core.StopBoard
) -> _core.LivenessChannel | None:
    """Another process, after "go": joins process 0's hub at the address that
    answered the roll call, on the port "go" announced (`roll_call`: run_worker's
    result).

    Returns None (after logging why, once) where it cannot (process 0 announced no
    port, or its hub does not answer); the job then runs on JAX's heartbeat alone for
    this process.
    """
    try:
        return _core.join_liveness(spec, board, roll_call, join_timeout=JOIN_TIMEOUT_SECONDS)
    except KdistError as error:
        _log_fallback(spec, str(error))
        return None


class BackgroundJoin:
    """join() on a helper thread, so that this process joins while JAX starts (the
    join waits on the network with the GIL released); result() waits for it.

    Joining before JAX's initialize returns also means process 0 never finishes
    before the others have joined.
    """

    def __init__(
        self, spec: _core.ClusterSpec, roll_call: _core.WorkerResult, *, board: _core.StopBoard
    ) -> None:
        self._channel: _core.LivenessChannel | None = None

        def run() -> None:
            self._channel = join(spec, roll_call, board=board)

        self._thread = threading.Thread(target=run, name="kdist-liveness-join", daemon=True)
        self._thread.start()

    def result(self) -> _core.LivenessChannel | None:
        """The joined channel, or None where the join failed (logged by join())."""
        self._thread.join()
        return self._channel


def _log_fallback(spec: _core.ClusterSpec, why: str) -> None:
    _logger.warning(
        "process %d runs without kdist's liveness channel: %s. Falling back to JAX's "
        "heartbeat: a process that fails or dies is noticed only after heartbeat_timeout "
        "(%d s, from %s), and the others then end by JAX's own abort. Allow TCP between "
        "the processes and process 0 on any port, not only the coordinator's, to get it back.",
        spec.process_id,
        why,
        spec.heartbeat_timeout,
        spec.sources["heartbeat_timeout"],
    )
