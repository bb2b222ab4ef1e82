"""After the start: how this process leaves the job, told through its liveness channel
(opened by `opening`).

The compiled core watches the connections on its own thread without the GIL: a
process that fails or dies is named to every other process at once, and each of them
prints one line and leaves with status 1 (policy "exit") even while its main thread
waits in a collective (liveness/liveness_channel.h: the line, the record, the exit). A
process whose start fails after "go" (JAX's initialize raised) tells the others too, so
they do not wait in JAX's barrier.

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
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn

from kdist import _core, _jax_backend, _log
from kdist._errors import BarrierError, RendezvousError, RendezvousTimeoutError
from kdist._together import stop

_logger = _log.LOGGER
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
    previous_excepthook: Any
    previous_threading_excepthook: Any


_installed: _Installed | None = None
_lock = threading.Lock()


def describe(error: BaseException) -> str:
    """An exception as the channel, `kdist launch` and `kdist.testing` name it: its type
    and its message's first line, "ValueError: bad shape" (never a note that follows)."""
    return _describe(type(error), error)


def install(channel: _core.LivenessChannel, spec: _core.ClusterSpec) -> None:
    """Hooks this process's exits to the channel (see the module docstring)."""
    global _installed
    with _lock:
        _installed = _Installed(
            channel,
            spec.process_id,
            float(spec.shutdown_timeout),
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
    logging whom it waits for) until every process has, so that it leaves last. What
    the finish means (a peer's failure let pass, a job that ended meanwhile, the last
    connections closing) is the core's (LivenessChannel::Finish).

    Returns whether JAX's shutdown barrier can still complete (False when a
    process left without it, or a failed peer never reaches it).
    """
    state = _installed
    if state is None:
        return True
    try:
        outcome = state.channel.finish(
            barrier,
            state.shutdown_timeout,
            progress=_log.Progress(),  # "process 0 finished; waiting for ..."
            progress_interval=_log.FIRST_SECONDS,
        )
    except RendezvousTimeoutError as error:
        _logger.warning("process 0 finished, but %s (shutdown_timeout); leaving anyway", str(error))
        return True
    except RendezvousError as error:  # the channel closed under it: nothing more to wait for
        _logger.warning("process %d finished, but %s; leaving anyway", state.process_id, error)
        return True
    if outcome is _core.FinishOutcome.ENDING:
        # A failure ended the job meanwhile: the channel's thread prints its line and
        # ends this process within about a second.
        time.sleep(_EXIT_WAIT_SECONDS)
        return True
    return outcome is _core.FinishOutcome.BARRIER


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
