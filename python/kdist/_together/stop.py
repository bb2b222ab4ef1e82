"""The job stops together: should_stop(step), request_stop(reason) and the stop signals.

A stop signal (SIGTERM by default: what Slurm, Kubernetes and `kdist launch` send) or
`request_stop(reason)` in any process is a stop request for the whole job, carried by the
liveness channel:

- when the program calls `should_stop(step)` every step, every process sees it turn True
  at the same step: the first step every process can still reach (one past the largest step
  any process had reported when the request arrived);
- when no process ever called `should_stop`, the whole job ends at once, every process
  leaving with 128 + the signal's number (143 for SIGTERM; a request from code counts as
  SIGTERM), each naming the process that was asked in its last line;
- a second stop signal in a process ends the job at once.

kdist installs its handler after JAX's initialize (JAX's own, XLA's preemption notifier,
replaces whatever was there when it starts); it records the signal and then calls the
handlers that were there before: XLA's (so `multihost_utils.reached_preemption_sync_point`
and Orbax's preemption saves keep working) and the program's own Python handler, if it set
one before `kdist.initialize()`.

With a stall timeout (`KDIST_STALL_TIMEOUT`, `initialize(stall_timeout=)`), a process that
reported progress (should_stop or barrier) and then none for that long ends the job, named
with its step and its Python stacks (written to its stderr by faulthandler, every thread).

A process outside any job (no `kdist.initialize()`, or a job of one process) answers for
its own signals alone.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import threading
from dataclasses import dataclass

from kdist import _core, _jax_backend, _progress
from kdist._errors import ArgumentTypeError

# The signal that makes faulthandler write this process's Python stacks (every thread) to
# its stderr, for the stall watchdog: the core's (a real-time signal nothing else uses),
# raised by the liveness channel's thread.
STACK_SIGNAL = _core.stack_signal()


@dataclass
class _Active:
    board: _core.StopBoard
    channel: _core.LivenessChannel | None  # None: signals stay this process's alone
    lone: bool  # the channel is this process's own (a job of one process)
    spec: _core.ClusterSpec
    signals: list[int]
    stacks: bool


_active: _Active | None = None
_lock = threading.Lock()
_lone_lock = threading.Lock()  # one lone channel, however many threads ask at once


def signal_numbers(spec: _core.ClusterSpec) -> list[int]:
    """The stop signals of `spec`, as numbers."""
    return list(spec.stop_signal_numbers)


def prepare(spec: _core.ClusterSpec) -> _core.StopBoard:
    """Before JAX's initialize: records the handlers the program installed for the stop
    signals (JAX is about to replace them) and makes this process's board."""
    program = [
        number
        for number in signal_numbers(spec)
        if callable(signal.getsignal(number))
        and signal.getsignal(number) is not signal.default_int_handler
    ]
    _core.remember_program_handlers(program)
    return _core.StopBoard()


def start_lone_channel(spec: _core.ClusterSpec, board: _core.StopBoard) -> _core.LivenessChannel:
    """A channel of this process alone: its own signals, stalls and barriers."""
    return _core.start_liveness_hub(spec, board, None, alone=True)


def activate(
    spec: _core.ClusterSpec,
    board: _core.StopBoard,
    channel: _core.LivenessChannel | None,
    *,
    lone: bool,
) -> None:
    """After JAX's initialize: kdist's handler for the stop signals, faulthandler for the
    stall watchdog's stacks, and should_stop / request_stop / barrier on `channel`."""
    global _active
    deactivate()  # a lone channel made before initialize() gives way to the job's
    with _lock:
        signals = signal_numbers(spec)
        if signals:
            _core.install_signal_relay(spec, board)
        stacks = spec.stall_timeout is not None
        if stacks:
            faulthandler.register(STACK_SIGNAL, file=_stderr_fd(), all_threads=True, chain=False)
        _active = _Active(board, channel, lone, spec, signals, stacks)
        _core.set_active_board(board)
        if lone:
            atexit.register(_lone_at_exit)


def deactivate() -> None:
    """Undoes activate() (kdist.shutdown()); stops a lone channel."""
    global _active
    with _lock:
        state, _active = _active, None
        _core.set_active_board(None)
    if state is None:
        return
    if state.signals:
        _core.uninstall_signal_relay()
    if state.stacks:
        faulthandler.unregister(STACK_SIGNAL)
    if state.lone:
        atexit.unregister(_lone_at_exit)
        if state.channel is not None:
            state.channel.stop()


def stopped_status() -> int | None:
    """The status this process leaves with because it stopped at the agreed step (128 +
    the stop signal: 143 for SIGTERM and for a request from code), or None."""
    state = _active
    return None if state is None else state.board.stopped_status


def _lone_at_exit() -> None:
    """A process outside any job (or a job of one) that stopped at its stop step leaves
    with its stop status (see leaving._at_exit for jobs)."""
    status = stopped_status()
    if status is None:
        return
    _jax_backend.shutdown_distributed()  # a job of one with a coordinator: JAX's own end
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status)


def channel() -> _core.LivenessChannel | None:
    """The channel that should_stop, request_stop and barrier use (a lone one when no
    job was started: this process alone)."""
    return _ensure().channel


def job_timeout() -> float:
    """The initialize timeout of the job (what barrier() waits by default)."""
    return float(_ensure().spec.timeout)


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno() if sys.stderr is not None else 2
    except (AttributeError, OSError, ValueError):
        return 2


def _ensure() -> _Active:
    """The active stop state; outside a job, this process's own (made on first use)."""
    state = _active
    if state is not None:
        return state
    with _lone_lock:
        if _active is None:
            # A job of this process alone: the core resolves the rest of the settings from
            # the environment (stop signals, stall timeout), as initialize() would.
            request = _core.Request()
            request.num_processes = "1"
            spec = _core.resolve(request, dict(os.environ))
            board = prepare(spec)
            activate(spec, board, start_lone_channel(spec, board), lone=True)
        assert _active is not None
        return _active


def should_stop(step: int) -> bool:
    """Whether the job stops at `step`: call it every step, in every process, with the
    same step numbers.

    Returns False until a stop is requested anywhere in the job (a stop signal such as
    SIGTERM, or `kdist.request_stop()`); then True in every process at the same step, the
    first one every process can still reach (one past the largest step any process had
    reported when the request arrived), and at every step after it. The common path is a
    few atomic operations in C++ (kdist._core.should_stop): no collective, no I/O, no
    lock. A process outside any job answers for its own stop signals. Calls to it are
    also the progress the stall watchdog (`stall_timeout`) watches, and what tells the
    job's starter that an attempt got somewhere (kdist._progress: a file written twice an
    attempt, never once a step).

    Args:
        step: This step's number (an int; the same sequence in every process).

    Returns:
        Whether to stop now (save, then leave the loop).

    Raises:
        kdist.ArgumentTypeError: `step` is not an int.

    Example:
        >>> import kdist
        >>> [kdist.should_stop(step) for step in range(3)]
        [False, False, False]
    """
    stop = _core.should_stop(step)  # checks `step` first
    _progress.note_step(step)
    return stop


def ensure_active() -> None:
    """Called by should_stop when no board is active: this process's own, outside a job."""
    _ensure()


# should_stop (in C++) asks this module for a board outside any job through the maker
# registered here, the module that hands should_stop out.
_core.set_board_maker(ensure_active)


def request_stop(reason: str) -> None:
    """Asks the whole job to stop, as a stop signal would: `should_stop` turns True at
    one agreed step in every process (or, when no process calls it, the job ends at once).
    Every process's line names this process and `reason`.

    Args:
        reason: Why, in a few words ("time limit", "loss is NaN").

    Raises:
        kdist.ArgumentTypeError: `reason` is not a string.

    Example:
        >>> import kdist
        >>> kdist.request_stop("an example")  # doctest: +SKIP
    """
    if not isinstance(reason, str):
        raise ArgumentTypeError(
            f"request_stop: reason must be a string, such as 'time limit'. Received: "
            f"{reason!r} of type {type(reason).__name__}"
        )
    channel = _ensure().channel
    if channel is not None:
        channel.request_stop(reason)
