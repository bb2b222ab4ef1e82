"""A warm spare: a waiting interpreter that has imported the heavy modules and runs one
process of an attempt when it is activated (`kdist._local_job.warm` starts and hands out
the spares).

The spare is started as `PYTHON -c CODE FD PARENT NICE LOG MODULES` (CODE: warm.SPARE_CODE,
which binds no name in `__main__`), in its own process group, with stdin from /dev/null and
its stdout and stderr on the pipes that will become the attempt's. It asks to die with its
parent, keeps what a fresh interpreter has (signal dispositions, hooks, `__main__`), sends
its own output to LOG while it imports MODULES (so nothing it prints reaches the program's
lines), says "ready" on the socket FD, and blocks reading its activation from it: the
attempt's command, environment and working folder. Then it takes them wholesale, puts back
what it kept, says "running" and runs the program as `python PROGRAM ARGS` or `python -m
MODULE ARGS` would: the same `sys.argv`, `__main__`, `__file__`, `sys.path[0]`, signals,
streams, exit status, and the same traceback for an uncaught exception (the spare's own
frames left out). Importing JAX starts no backend: the coordinator, the process id and
CUDA_VISIBLE_DEVICES are the attempt's, read after the activation.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

# The spare's words on its socket, one line each (the pool reads them: kdist._local_job.warm).
READY = "ready"
RUNNING = "running"
UNFIT = "unfit"  # the activation could not be applied; the spare leaves, the pool starts cold

_HOOKS = ("excepthook", "displayhook", "breakpointhook", "unraisablehook")


@dataclass
class _Fresh:
    """What a fresh interpreter had before the spare imported anything."""

    signals: dict[int, Any] = field(default_factory=dict)
    mask: set[int] = field(default_factory=set)
    hooks: dict[str, Any] = field(default_factory=dict)
    threading_excepthook: Any = None
    main_keys: dict[str, Any] = field(default_factory=dict)
    recursion_limit: int = 1000
    switch_interval: float = 0.005
    gc_threshold: tuple[int, ...] = ()
    gc_enabled: bool = True
    nice: int = 0


# Set when the program's uncaught exception was a KeyboardInterrupt: the interpreter then
# ends by SIGINT after its finalization, as CPython does.
_interrupted = [False]


def _die_by_sigint_after_finalization() -> None:
    """Registered first, so it runs last of the atexit handlers."""
    if _interrupted[0]:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _keep_fresh() -> _Fresh:
    fresh = _Fresh()
    for number in signal.valid_signals():
        try:
            fresh.signals[int(number)] = signal.getsignal(number)
        except (OSError, ValueError):
            continue
    fresh.mask = {int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])}
    fresh.hooks = {name: getattr(sys, name) for name in _HOOKS}
    fresh.threading_excepthook = threading.excepthook
    fresh.main_keys = dict(sys.modules["__main__"].__dict__)
    fresh.recursion_limit = sys.getrecursionlimit()
    fresh.switch_interval = sys.getswitchinterval()
    fresh.gc_threshold = gc.get_threshold()
    fresh.gc_enabled = gc.isenabled()
    fresh.nice = os.getpriority(os.PRIO_PROCESS, 0)
    return fresh


def _put_back(fresh: _Fresh) -> None:
    """Signals, hooks and interpreter settings as the fresh interpreter had them."""
    for number, handler in fresh.signals.items():
        if handler is None or number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if signal.getsignal(number) != handler:
                signal.signal(number, handler)
        except (OSError, ValueError):
            continue
    signal.pthread_sigmask(signal.SIG_SETMASK, fresh.mask)
    signal.set_wakeup_fd(-1)
    for name, hook in fresh.hooks.items():
        setattr(sys, name, hook)
    threading.excepthook = fresh.threading_excepthook
    sys.setrecursionlimit(fresh.recursion_limit)
    sys.setswitchinterval(fresh.switch_interval)
    gc.set_threshold(*fresh.gc_threshold)
    if fresh.gc_enabled:
        gc.enable()
    else:
        gc.disable()


def _renice_every_thread(nice: int) -> None:
    """Every thread of this process back to `nice` (threads made while the spare imported
    took its lower priority)."""
    for tid in os.listdir("/proc/self/task"):
        os.setpriority(os.PRIO_PROCESS, int(tid), nice)


def _send(channel: socket.socket, word: str, detail: str = "") -> None:
    channel.sendall(f"{word} {detail}".rstrip().encode() + b"\n")


def _receive(channel: socket.socket) -> dict[str, Any] | None:
    """The activation (one JSON line), or None when the pool closed the socket."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = channel.recv(1 << 20)
        if not chunk:
            return None
        data += chunk
    found = json.loads(data)
    return found if isinstance(found, dict) else None


def _restore_streams(saved: tuple[int, int]) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    for fd, copy in zip((1, 2), saved, strict=True):
        os.dup2(copy, fd)
        os.close(copy)


def _without_own_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the first frame that is not this module's (the program's, or
    runpy's for `-m`, as a cold interpreter shows them)."""
    own = __file__
    while tb is not None and tb.tb_frame.f_code.co_filename == own:
        tb = tb.tb_next
    return tb


def _run_path(target: str) -> None:
    """`python PROGRAM`: PROGRAM's code in `__main__`, as CPython's main does it."""
    import importlib.machinery

    filename = os.path.abspath(target)
    try:
        with open(filename, "rb") as stream:
            source = stream.read()
    except OSError as error:
        sys.stderr.write(
            f"{sys.executable}: can't open file {filename!r}: [Errno {error.errno}] "
            f"{error.strerror}\n"
        )
        raise SystemExit(2) from None
    main = sys.modules["__main__"].__dict__
    main["__file__"] = filename
    main["__cached__"] = None
    main["__loader__"] = importlib.machinery.SourceFileLoader("__main__", filename)
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, main)


def _run_module(module: str) -> None:
    """`python -m MODULE`: what CPython's main calls."""
    import runpy

    runpy._run_module_as_main(module, True)  # type: ignore[attr-defined]


def _activate(
    activation: dict[str, Any], fresh: _Fresh, saved: tuple[int, int], niced: bool
) -> tuple[str, str]:
    """Takes the attempt's environment, folder, argv and sys.path; puts back what a fresh
    interpreter had. Returns (kind, target): ("path", PROGRAM) or ("module", MODULE)."""
    environment = activation["env"]
    os.chdir(activation["cwd"])
    os.environ.clear()
    os.environ.update(environment)
    if niced:
        _renice_every_thread(fresh.nice)
    kind, target, args = activation["kind"], activation["target"], activation["args"]
    sys.orig_argv[:] = activation["command"]
    if kind == "module":
        sys.argv[:] = ["-m", *args]
        path0 = os.getcwd()
    else:
        sys.argv[:] = [target, *args]
        path0 = os.path.dirname(os.path.realpath(target))
    if not sys.flags.safe_path and sys.path:
        sys.path[0] = path0  # the spare's own (`-c`: '') gives way to the program's
    main = sys.modules["__main__"].__dict__
    main.clear()
    main.update(fresh.main_keys)
    _put_back(fresh)
    _restore_streams(saved)
    return kind, target


def serve() -> None:
    """The spare's life: wait warm, then run the program it is given (never returns
    normally but through the program's own end)."""
    fd, parent, nice, log, modules = sys.argv[1:6]
    fresh = _keep_fresh()
    atexit.register(_die_by_sigint_after_finalization)
    from kdist._local_job.process import die_with_parent

    die_with_parent(int(parent))
    channel = socket.socket(fileno=int(fd))
    # Nothing the spare prints reaches the attempt's pipes: its lines go to its log.
    saved = (os.dup(1), os.dup(2))
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    niced = int(nice) > 0
    if niced:  # a lower priority while importing; every thread is put back on activation
        os.setpriority(os.PRIO_PROCESS, 0, min(19, fresh.nice + int(nice)))
    for name in filter(None, modules.split(",")):
        try:
            importlib.import_module(name)
        except Exception as error:  # the program meets the same error itself, if it imports it
            print(f"kdist spare: cannot preload {name}: {type(error).__name__}: {error}")
    print(f"kdist spare: ready (pid {os.getpid()})", flush=True)
    _send(channel, READY, str(os.getpid()))
    activation = _receive(channel)
    if activation is None:  # the pool let it go
        os._exit(0)
    try:
        kind, target = _activate(activation, fresh, saved, niced)
    except Exception as error:
        _send(channel, UNFIT, f"{type(error).__name__}: {error}")
        os._exit(1)
    _send(channel, RUNNING)
    channel.close()
    try:
        if kind == "module":
            _run_module(target)
        else:
            _run_path(target)
    except SystemExit:
        raise
    except BaseException as error:  # an uncaught exception, as the interpreter shows it
        tb = _without_own_frames(error.__traceback__)
        error = error.with_traceback(tb)
        setattr(sys, "last_exc", error)  # noqa: B010 (Python 3.12's name; 3.11 has none)
        sys.last_type, sys.last_value, sys.last_traceback = type(error), error, tb
        if isinstance(error, KeyboardInterrupt):
            _interrupted[0] = True
        _print_uncaught(error, tb)
        raise SystemExit(1) from None


def _print_uncaught(error: BaseException, tb: TracebackType | None) -> None:
    """sys.excepthook(error), as PyErr_Print calls it (its own failure shown as CPython
    shows it)."""
    try:
        sys.excepthook(type(error), error, tb)
    except BaseException as hook_error:
        sys.stderr.write("Error in sys.excepthook:\n")
        sys.__excepthook__(type(hook_error), hook_error, hook_error.__traceback__)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(error), error, tb)
