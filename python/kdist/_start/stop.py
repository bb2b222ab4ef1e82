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

import faulthandler
import os
import signal
import sys
import threading
from dataclasses import dataclass

from kdist import _core
from kdist._errors import ArgumentTypeError

# The signal that makes faulthandler write this process's Python stacks (every thread) to
# its stderr, for the stall watchdog. A real-time signal nothing else here uses.
STACK_SIGNAL = int(signal.SIGRTMAX) - 1
# The name of the variable that names the file where this process appends the records of
# its job's end (JSON lines; kdist launch sets it for every process).
VERDICT_FILE_VARIABLE = "KDIST_VERDICT_FILE"
# How long should_stop waits for the job to agree on the stop step, at most, before it
# says so: the agreement takes one round trip to process 0.
_AGREEMENT_SECONDS = 60.0


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
    return [int(getattr(signal, name)) for name in spec.stop_signals]


def verdict_file() -> str:
    """Where this process appends the records of its job's end ("" for nowhere)."""
    return os.environ.get(VERDICT_FILE_VARIABLE, "")


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
    return _core.start_liveness_hub(
        1,
        os.uname().nodename,
        os.getpid(),
        "",
        float(spec.heartbeat_timeout),
        spec.on_peer_failure,
        board=board,
        stall_timeout=spec.stall_timeout,
        stack_signal=stack_signal(spec),
        record_path=verdict_file(),
    )


def stack_signal(spec: _core.ClusterSpec) -> int:
    """The signal the channel raises to dump this process's stacks (0 without a watchdog)."""
    return STACK_SIGNAL if spec.stall_timeout is not None else 0


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
            _core.install_signal_relay(signals, board)
        stacks = spec.stall_timeout is not None
        if stacks:
            faulthandler.register(STACK_SIGNAL, file=_stderr_fd(), all_threads=True, chain=False)
        _active = _Active(board, channel, lone, spec, signals, stacks)


def deactivate() -> None:
    """Undoes activate() (kdist.shutdown()); stops a lone channel."""
    global _active
    with _lock:
        state, _active = _active, None
    if state is None:
        return
    if state.signals:
        _core.uninstall_signal_relay()
    if state.stacks:
        faulthandler.unregister(STACK_SIGNAL)
    if state.lone and state.channel is not None:
        state.channel.stop()


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
    from kdist._start import config

    with _lone_lock:
        if _active is None:
            spec = config.resolve(num_processes=1)
            board = prepare(spec)
            activate(spec, board, start_lone_channel(spec, board), lone=True)
        assert _active is not None
        return _active


def should_stop(step: int) -> bool:
    """Whether the job stops at `step`: call it every step, in every process, with the
    same step numbers.

    Returns False until a stop is requested anywhere in the job (a stop signal, or
    `kdist.request_stop()`); then True in every process at the same step, the first one
    every process can still reach, and at every step after it. The common path costs a
    few atomic operations: no collective, no I/O, no lock. A process outside any job
    answers for its own stop signals. Calls to it are also the progress the stall
    watchdog (`stall_timeout`) watches.

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
    state = _active if _active is not None else _ensure()
    try:
        answer = state.board.report(step)
    except TypeError:
        raise ArgumentTypeError(
            f"should_stop: step must be an int (the step's number, the same in every "
            f"process). Received: {step!r} of type {type(step).__name__}"
        ) from None
    if answer == 0:
        return False
    if answer == 1:
        return True
    return _after_agreement(state.board, step)


def _after_agreement(board: _core.StopBoard, step: int) -> bool:
    """A stop is being agreed and `step` may be the one: wait for the decision."""
    if not board.wait_for_decision(_AGREEMENT_SECONDS):
        from kdist._errors import RendezvousTimeoutError

        raise RendezvousTimeoutError(
            f"should_stop({step}): the job did not agree on a stop step within "
            f"{_AGREEMENT_SECONDS:g} s (process 0 asked every process for its step; one "
            "did not answer). The liveness channel ends the job when a process dies."
        )
    return bool(board.report(step) == 1)


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
