"""After the start: the liveness channel, and how this process leaves the job.

Process 0 listens for the others' liveness connections before its roll call
and announces the port and a nonce in "go"; every other process joins while
JAX starts (process 0's end waits for processes that have not joined yet, for
at most JOIN_TIMEOUT_SECONDS after it finished). The compiled core watches the
connections on its own thread without the GIL: a process that fails or dies
is named to every other process at once, and each of them prints one line and
leaves with status 1 (policy "exit") even while its main thread waits in a
collective. A process whose start fails after "go" (JAX's initialize raised)
tells the others too, so they do not wait in JAX's barrier.

What a process tells the others, and when:

- an uncaught exception (main thread: `sys.excepthook`; any other thread:
  `threading.excepthook`; each chained to the hook that was set before
  `initialize()`): "failed", with the exception's type and message (`describe`: not the
  notes Python prints after it, such as JAX's traceback-filtering note), sent after the
  traceback is printed; then the process leaves with status 1 (130 for
  KeyboardInterrupt) without JAX's shutdown barrier;
- a normal end (the program returns, `sys.exit()`): "finished", from an
  `atexit` handler that runs before JAX's own shutdown; process 0 then waits
  until every process has finished, logging whom it waits for, so it leaves
  last;
- `os._exit(0)` (wrapped while the channel is up): "finished, leaving without
  JAX's barrier"; once every process finished, the others skip the barrier
  too, instead of waiting in it until JAX's shutdown timeout; `os._exit(N)`
  with N != 0 is a failure;
- `kdist.shutdown()`: "finished", then JAX's shutdown as usual.

What cannot be told: a SIGKILL, a segfault, or `_exit` called from C. The
kernel still closes the process's connection at once, and the others report
that it died ("its connection closed without a finish message"); `kdist
launch` names the signal in its summary. A host that vanishes without closing
anything (it lost power or its network) is caught by TCP keepalive, sized from
the unreachable timeout (`KDIST_UNREACHABLE_TIMEOUT`, 20 s by default), and
named unreachable, not dead.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn

from kdist import _core, _jax_backend, _log
from kdist._errors import BarrierError, KdistError, RendezvousError, RendezvousTimeoutError
from kdist._together import stop

_logger = _log.LOGGER
# How long another process tries to join process 0's hub before falling back.
JOIN_TIMEOUT_SECONDS = 5.0
# How long process 0 waits, once every process finished, for their connections to
# close before it leaves without JAX's barrier (so it leaves last).
_LAST_OUT_SECONDS = 2.0
# A bound on the wait for this process's own exit after a peer's failure ended the
# job (the channel's thread calls _exit within about a second).
_EXIT_WAIT_SECONDS = 10.0
_MAX_MESSAGE_CHARS = 2000
# An error raised inside JAX (a collective that lost its peer: JaxRuntimeError, or a
# ValueError from Gloo) is often the consequence of another process's death, which
# the channel learns at the same moment (both are the same closed connections): this
# process waits this long for that news before it reports the error as the job's
# failure. Errors raised elsewhere are reported at once.
CONSEQUENCE_WAIT_SECONDS = 0.5
_JAX_RUNTIME_ERRORS = ("JaxRuntimeError", "XlaRuntimeError")
_JAX_PACKAGES = (f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}")

_real_exit = os._exit


@dataclass
class _Installed:
    channel: _core.LivenessChannel
    process_id: int
    shutdown_timeout: float
    on_peer_failure: str
    previous_excepthook: Any
    previous_threading_excepthook: Any


_installed: _Installed | None = None
_lock = threading.Lock()


def start_hub(
    spec: _core.ClusterSpec, shared: _core.JobShared, board: _core.StopBoard
) -> _core.LivenessChannel | None:
    """Process 0, before its roll call: listens for the others' liveness connections
    and writes the port and nonce into `shared`, which "go" carries. `board`: this
    process's (stop signals, should_stop, barriers, the stall watchdog).

    Returns None (after logging why, once) where it cannot listen; the job then
    runs on JAX's heartbeat alone.
    """
    nonce = secrets.token_hex(16)
    try:
        channel = _core.start_liveness_hub(
            spec, board, nonce=nonce, record_path=stop.verdict_file()
        )
    except KdistError as error:
        _log_fallback(spec, f"process 0 cannot listen for it: {error}")
        return None
    shared.liveness_port = channel.port
    shared.liveness_nonce = nonce
    return channel


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
        return _core.join_liveness(
            spec,
            board,
            roll_call,
            record_path=stop.verdict_file(),
            join_timeout=JOIN_TIMEOUT_SECONDS,
        )
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


def describe(error: BaseException) -> str:
    """An exception as the channel, `kdist launch` and `kdist.testing` name it: its type
    and its message's first line, "ValueError: bad shape" (never a note that follows)."""
    return _describe(type(error), error)


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


def install(channel: _core.LivenessChannel, spec: _core.ClusterSpec) -> None:
    """Hooks this process's exits to the channel (see the module docstring)."""
    global _installed
    with _lock:
        _installed = _Installed(
            channel,
            spec.process_id,
            float(spec.shutdown_timeout),
            spec.on_peer_failure,
            sys.excepthook,
            threading.excepthook,
        )
        sys.excepthook = _excepthook
        threading.excepthook = _threading_excepthook
        os._exit = _exit_wrapper
        atexit.register(_at_exit)


def uninstall() -> _core.LivenessChannel | None:
    """Undoes install() (hooks the program set since are left alone); returns the channel."""
    global _installed
    with _lock:
        state, _installed = _installed, None
        if state is None:
            return None
        if sys.excepthook is _excepthook:
            sys.excepthook = state.previous_excepthook
        if threading.excepthook is _threading_excepthook:
            threading.excepthook = state.previous_threading_excepthook
        if os._exit is _exit_wrapper:
            os._exit = _real_exit
        atexit.unregister(_at_exit)
        return state.channel


def active() -> bool:
    """Whether this process is watched by (or watches, in process 0) the channel."""
    return _installed is not None


def reported_failures() -> list[str]:
    """The lines printed about peers' failures under on_peer_failure="ignore"."""
    state = _installed
    return list(state.channel.reported) if state is not None else []


def _describe(exc_type: type[BaseException], exc: BaseException | None) -> str:
    """ "TypeError: cannot reshape array of shape (2,) ...": the exception's type (with
    its module, as Python's traceback names it) and its message's first line.

    Never the last line Python prints: that is the last of the exception's notes when it
    has any (`add_note()`), and nearly every error of a JAX program carries JAX's note
    "For simplicity, JAX has removed its internal frames ...". A chained exception is
    named by the one raised, not by its cause.
    """
    module, name = exc_type.__module__, exc_type.__qualname__
    kind = name if module in ("builtins", "__main__", None) else f"{module}.{name}"
    try:
        message = str(exc) if exc is not None else ""
    except Exception:
        message = "<its message could not be read>"
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    text = f"{kind}: {first}" if first else kind
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def _maybe_a_consequence(exc_type: type[BaseException] | None, tb: TracebackType | None) -> bool:
    """Whether an exception came out of JAX (its type, or its innermost frames), or is a
    barrier's that another process's end abandoned (kdist.BarrierError: the hub tells the
    barrier and the failure in the same moment)."""
    if exc_type is None:
        return False
    if issubclass(exc_type, BarrierError) and not issubclass(exc_type, TimeoutError):
        return True
    if any(k.__name__ in _JAX_RUNTIME_ERRORS for k in exc_type.__mro__):
        return True
    frames = traceback.extract_tb(tb)[-3:] if tb is not None else []
    return any(package in frame.filename for frame in frames for package in _JAX_PACKAGES)


def wait_if_a_consequence(exc_type: type[BaseException] | None, tb: TracebackType | None) -> None:
    """For an exception that came out of JAX: waits up to CONSEQUENCE_WAIT_SECONDS for
    news of a peer's failure, of which it is likely the consequence (under "exit", the
    channel's thread then ends this process with the peer's line). Other exceptions,
    and a process outside the channel, do not wait."""
    state = _installed
    if state is None or not _maybe_a_consequence(exc_type, tb):
        return
    deadline = time.monotonic() + CONSEQUENCE_WAIT_SECONDS
    while time.monotonic() < deadline and not state.channel.reported:
        time.sleep(0.01)


def _fail(
    message: str,
    status: int,
    exc_type: type[BaseException] | None = None,
    tb: TracebackType | None = None,
) -> None:
    """Tells every process that this one failed, says so, and leaves with `status`
    without JAX's shutdown barrier (which would wait for processes that are leaving).

    A JAX runtime error first waits (CONSEQUENCE_WAIT_SECONDS) for news of a peer's
    death or failure: a collective fails as soon as its peer's connection drops, and
    the first failure to name is the peer's, not this consequence. When the news
    comes, the channel's thread ends this process with the peer's line.
    """
    state = _installed
    if state is None:
        return
    wait_if_a_consequence(exc_type, tb)
    line = state.channel.report_failure(message)  # the core's line
    _flush()
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(line + "\n")
    _flush()
    _real_exit(status)


def _ended_by_the_job(exc_type: type[BaseException] | None, tb: TracebackType | None) -> bool:
    """Whether an exception out of JAX is the consequence of the job's end that kdist
    already decided (a stop, a stall, another process's failure): the channel's thread
    is about to end this process with the job's line, so the error is not news."""
    state = _installed
    return state is not None and state.channel.job_ended and _maybe_a_consequence(exc_type, tb)


def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    state = _installed
    if _ended_by_the_job(exc_type, tb):
        time.sleep(_EXIT_WAIT_SECONDS)  # the channel's thread ends this process meanwhile
    if state is not None:
        state.previous_excepthook(exc_type, exc, tb)
    else:
        sys.__excepthook__(exc_type, exc, tb)
    status = 128 + 2 if issubclass(exc_type, KeyboardInterrupt) else 1
    _fail(_describe(exc_type, exc), status, exc_type, tb)


def _threading_excepthook(args: threading.ExceptHookArgs) -> None:
    state = _installed
    if state is not None:
        state.previous_threading_excepthook(args)
    else:
        threading.__excepthook__(args)
    if args.exc_type is SystemExit:
        return  # a thread that calls sys.exit() just ends, as in plain Python
    name = args.thread.name if args.thread is not None else "?"
    message = f"{_describe(args.exc_type, args.exc_value)} (in thread {name!r})"
    _fail(message, 1, args.exc_type, args.exc_traceback)


def finish(barrier: bool) -> bool:
    """Says this process finished. In process 0, waits (bounded by shutdown_timeout,
    logging whom it waits for) until every process has, so that it leaves last.

    Returns whether JAX's shutdown barrier can still complete (False when a
    process left without it).
    """
    state = _installed
    if state is None:
        return True
    state.channel.finish(barrier)
    if state.process_id != 0:
        # Under "ignore", a peer that failed never reaches JAX's barrier.
        return not state.channel.reported
    try:
        all_barrier = state.channel.wait_all_done(
            state.shutdown_timeout,
            progress=_log.Progress(),  # "process 0 finished; waiting for ..."
            progress_interval=_log.FIRST_SECONDS,
        )
    except RendezvousTimeoutError as error:
        _logger.warning("process 0 finished, but %s (shutdown_timeout); leaving anyway", str(error))
        return True
    except RendezvousError:
        if state.on_peer_failure == "ignore":
            return False  # the failed process never reaches JAX's barrier
        # A failure ended the job meanwhile: the channel's thread prints its line
        # and ends this process within about a second.
        time.sleep(_EXIT_WAIT_SECONDS)
        return True
    if not all_barrier:
        deadline = time.monotonic() + _LAST_OUT_SECONDS
        while state.channel.watched and time.monotonic() < deadline:
            time.sleep(0.01)
    return bool(all_barrier)


def _at_exit() -> None:
    """Runs before JAX's own atexit shutdown (registered after JAX's import). A process
    that stopped at the job's agreed stop step leaves with its stop status (143 for
    SIGTERM), after JAX's shutdown barrier, so that schedulers and `kdist launch
    --max-restarts` can start the job again."""
    stopped = stop.stopped_status()
    barrier = finish(barrier=True)
    if stopped is not None:
        if barrier:
            _jax_backend.shutdown_distributed()  # JAX's own barrier, before leaving
        _flush()
        _real_exit(stopped)
    if barrier:
        return
    # A process left without JAX's barrier: the barrier can never complete.
    _flush()
    _real_exit(0)


def _exit_wrapper(status: int) -> NoReturn:
    """os._exit while the channel is up: says why this process leaves, then leaves."""
    state = _installed
    if state is not None:
        if status == 0:
            finish(barrier=False)
        else:
            state.channel.report_failure(f"it left with os._exit({status})")
    _real_exit(status)
