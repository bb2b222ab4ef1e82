"""The roll call, run by initialize() before JAX starts.

Process 0 binds the coordinator port and collects a hello from every other
process; the others connect (with backoff, until the deadline) and wait for
its verdict. The work happens in the compiled core with the GIL released;
this module supplies who this process is, hands the core the start's
deadline, and says how the wait goes (`kdist._log`: visible without any logging
configuration, a first line after a few seconds, then every half minute).
"""

from __future__ import annotations

import os
import signal
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from kdist import _core, _jax_backend, _log
from kdist._start import environment_fingerprint

_logger = _log.LOGGER


def _progress(spec: _core.ClusterSpec) -> _log.Progress:
    """The progress callback of this process's waits."""
    return _log.Progress(f"process {spec.process_id} of {spec.num_processes}")


@dataclass(frozen=True)
class RollCallOutcome:
    """What a process takes from a roll call that ended in "go"."""

    # What "go" carried for the whole job (process 0: what it sent).
    shared: _core.JobShared
    # This process's environment fingerprint as compared: (name, value) pairs; empty
    # under consistency "off".
    compared: tuple[tuple[str, str], ...] = ()
    # Another process's end of the roll call, as the core returned it: the coordinator
    # endpoint that answered (an IP literal "host:port", to probe for JAX's service) and
    # process 0's "go" (which join_liveness reads); None in process 0.
    worker: _core.WorkerResult | None = None


def _note_if_ctrl_c_cannot_interrupt() -> None:
    """Says once, before the wait, when Ctrl-C cannot stop it: SIGINT ignored."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread sees KeyboardInterrupt; it is not waiting here
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        return
    _logger.warning(
        "SIGINT is ignored in this process (inherited from what started it: nohup, or a "
        "background job of a non-interactive shell), so Ctrl-C cannot interrupt kdist's "
        "wait for the other processes; it ends at its deadline or by SIGTERM. Start the "
        "process in the foreground, or call signal.signal(signal.SIGINT, "
        "signal.default_int_handler) before kdist.initialize()."
    )


def roll_call(
    spec: _core.ClusterSpec,
    deadline: _core.Deadline,
    shared: _core.JobShared,
    on_waiting: Callable[[], None] | None = None,
    tls: str | None = None,
) -> RollCallOutcome:
    """Runs this process's side of the roll call.

    Args:
        spec: The resolved configuration (at least two processes, a
            coordinator address).
        deadline: The whole start's deadline (its budget is spec.timeout),
            made when initialize() began.
        shared: What process 0's "go" carries to every process (the job
            seed); ignored in the other processes, which receive it.
        on_waiting: Called once the wait begins: for process 0 after it
            holds the coordinator port (a taken port raises before), for the
            others at once. initialize() starts importing JAX there.
        tls: What this process's start does about TLS (compared like the rest of the
            environment: see environment_fingerprint.collect). Defaults to None: not
            compared.

    Returns:
        What "go" carried and, in processes other than 0, the core's result of
        the roll call (the endpoint that answered, to probe for JAX's service).

    Raises:
        kdist.PortInUseError: process 0 found the coordinator port taken.
        kdist.CoordinatorUnreachableError: the coordinator did not answer in time.
        kdist.RendezvousError: the processes disagree (ids, num_processes,
            coordinator address, configuration, token).
        kdist.RendezvousTimeoutError: not every process joined in time.
        KeyboardInterrupt: Ctrl-C while waiting (nothing is left open).

    Example:
        >>> from kdist import _core
        >>> from kdist._start import config, roll_call
        >>> spec = config.resolve("127.0.0.1:1", 2, 1, timeout=0.2)
        >>> deadline = _core.Deadline(spec.timeout)
        >>> roll_call.roll_call(spec, deadline, _core.JobShared())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        kdist.CoordinatorUnreachableError: process 1 ...
    """
    _note_if_ctrl_c_cannot_interrupt()
    jax_version = _jax_backend.jax_version()
    host = os.uname().nodename
    pid = os.getpid()
    environment = [
        (entry.name, entry.value, entry.must_match)
        for entry in environment_fingerprint.collect(
            local_device_ids=spec.local_device_ids, process_id=spec.process_id, tls=tls
        )
    ]
    if spec.process_id == 0:
        listener = _core.bind_coordinator_port(spec)
        if on_waiting is not None:
            on_waiting()
        summary = _core.run_coordinator(
            spec,
            jax_version,
            host,
            pid,
            shared=shared,
            listener=listener,
            deadline=deadline,
            progress=_progress(spec),
            progress_interval=_log.FIRST_SECONDS,
            environment=environment,
        )
        dropped = summary.dropped
        _logger.info(
            "roll call complete: %d of %d processes joined on %s, %.3f s after initialize() "
            "began%s",
            len(summary.members) + 1,
            spec.num_processes,
            summary.listened_on,
            summary.seconds,
            f"; dropped {dropped} connection{'' if dropped == 1 else 's'} that did not speak "
            "the kdist protocol"
            if dropped
            else "",
        )
        shared.consistency_notes = summary.consistency_notes
        _warn_about_differences(shared.consistency_notes)
        return RollCallOutcome(shared, _compared(spec, environment))
    if on_waiting is not None:
        on_waiting()
    result = _core.run_worker(
        spec,
        jax_version,
        host,
        pid,
        deadline=deadline,
        progress=_progress(spec),
        progress_interval=_log.FIRST_SECONDS,
        environment=environment,
    )
    _logger.info(
        "process %d joined the roll call at %s after %d attempt(s) in %.3f s",
        spec.process_id,
        result.connected_to,
        result.attempts,
        result.seconds,
    )
    go = result.go
    _warn_about_differences(go.shared.consistency_notes)
    return RollCallOutcome(go.shared, _compared(spec, environment), worker=result)


def wait_for_coordinator_service(
    spec: _core.ClusterSpec, roll_call: _core.WorkerResult, deadline: _core.Deadline
) -> None:
    """Waits until process 0's JAX coordination service accepts connections, at the
    endpoint that answered this process's roll call (`roll_call.connected_to`).

    Called after the roll call's "go" (and after importing JAX), so JAX's
    client connects at its first try instead of sleeping in its own retry.

    Args:
        spec: The resolved configuration.
        roll_call: What `roll_call` returned for this process (run_worker's result).
        deadline: The whole start's deadline, made when initialize() began.

    Raises:
        kdist.RendezvousTimeoutError: the service did not come up in time.
        KeyboardInterrupt: Ctrl-C while waiting.

    Example:
        >>> outcome = roll_call.roll_call(spec, deadline, shared)  # doctest: +SKIP
        >>> roll_call.wait_for_coordinator_service(spec, outcome.worker, deadline)  # doctest: +SKIP
    """
    _core.wait_for_coordinator_service(
        roll_call,
        num_processes=spec.num_processes,
        deadline=deadline,
        progress=_progress(spec),
        progress_interval=_log.FIRST_SECONDS,
    )


def _compared(
    spec: _core.ClusterSpec, environment: list[tuple[str, str, bool]]
) -> tuple[tuple[str, str], ...]:
    if spec.consistency == "off":
        return ()
    return tuple((name, value) for name, value, _ in environment)


def _warn_about_differences(notes: str) -> None:
    """Every process warns with the environment differences process 0 let pass."""
    if notes:
        warnings.warn(
            "the job's processes differ (KDIST_CONSISTENCY=warn lets these pass; =strict "
            "stops the job):\n  " + notes.replace("\n", "\n  "),
            UserWarning,
            stacklevel=4,
        )
