"""What a process sees of how it was started, for the warm-vs-cold test (tests/cli/
test_launch_warm.py): one JSON line on stdout, then it ends as its attempt says.

Run as `python tests/programs/warm_probe.py ARGS` or `python -m warm_pkg.probe ARGS` (from
tests/programs). On attempt A (KDIST_RESTART_COUNT) it ends as ENDINGS[A] says: 0 a
warm-up that fails (so that the launcher starts the next attempt), then exit 3, death by
SIGTERM, an uncaught exception, exit 0 (WARM_PROBE_ENDINGS, comma-separated, chooses
others). WARM_PROBE_WAIT_FOR=FILE: attempt 0 waits until FILE exists (bounded) before it
ends. WARM_PROBE_COMPILE=1: it first compiles and runs a jitted function named `probe`.
"""

import ctypes
import json
import os
import signal
import sys
import threading
import time

import warm_sibling  # a sibling module: found through sys.path[0], the script's folder

ENDINGS = os.environ.get("WARM_PROBE_ENDINGS", "warm-up,exit 3,SIGTERM,raise,exit 0").split(",")


def handler_name(handler: object) -> str:
    if handler is signal.SIG_DFL:
        return "default"
    if handler is signal.SIG_IGN:
        return "ignored"
    if handler is signal.default_int_handler:
        return "KeyboardInterrupt"
    return repr(handler)


def describe(main_globals: dict[str, object], sibling: object) -> dict[str, object]:
    libc = ctypes.CDLL(None, use_errno=True)
    death = ctypes.c_int(0)
    libc.prctl(2, ctypes.byref(death), 0, 0, 0)  # PR_GET_PDEATHSIG
    loader = main_globals.get("__loader__")
    spec = main_globals.get("__spec__")
    return {
        "argv": sys.argv,
        "orig_argv": sys.orig_argv,
        "executable": sys.executable,
        "name": main_globals["__name__"],
        "file": main_globals.get("__file__"),
        "package": main_globals.get("__package__"),
        "spec": getattr(spec, "name", None),
        "loader": type(loader).__name__,
        "globals": sorted(main_globals),
        "path0": sys.path[0],
        "cwd": os.getcwd(),
        "sibling": getattr(sibling, "WORD", None),
        "stdin": [sys.stdin.isatty(), sys.stdin.read()],
        "stdout_tty": sys.stdout.isatty(),
        "environ": dict(os.environ),
        "signals": {
            signal.Signals(s).name: handler_name(signal.getsignal(s))
            for s in signal.valid_signals()
            if s in signal.Signals.__members__.values()
        },
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "pdeathsig": death.value,
        "own_group": os.getpgrp() == os.getpid(),
        "own_session": os.getsid(0) == os.getpid(),
        "parent": os.getppid(),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "main_thread": threading.current_thread() is threading.main_thread(),
        "hooks": [sys.excepthook is sys.__excepthook__, sys.displayhook is sys.__displayhook__],
        "recursion_limit": sys.getrecursionlimit(),
        "flags": list(sys.flags),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "jax_backends": "started"
        if "jax._src.xla_bridge" in sys.modules and sys.modules["jax._src.xla_bridge"]._backends
        else "none",
    }


def compile_probe() -> None:
    import jax
    import jax.numpy as jnp

    def probe(x: object) -> object:
        return jnp.sin(x) * 2 + 1

    print(float(jax.jit(probe)(jnp.ones(4)).sum()), flush=True)


def end(attempt: int) -> None:
    wait_for = os.environ.get("WARM_PROBE_WAIT_FOR")
    if wait_for and attempt == 0:
        deadline = time.monotonic() + 120
        while not os.path.exists(wait_for) and time.monotonic() < deadline:
            time.sleep(0.05)
    ending = ENDINGS[min(attempt, len(ENDINGS) - 1)]
    print(f"ending: {ending}", flush=True)
    print("a line on stderr", file=sys.stderr, flush=True)
    if ending == "warm-up":
        sys.exit(1)
    if ending == "exit 3":
        sys.exit(3)
    if ending == "SIGTERM":
        os.kill(os.getpid(), signal.SIGTERM)
    if ending == "raise":
        warm_sibling.fail("an uncaught error")


if __name__ == "__main__":
    if os.environ.get("WARM_PROBE_COMPILE") == "1":
        compile_probe()
    print(json.dumps(describe(globals(), warm_sibling)), flush=True)
    end(int(os.environ["KDIST_RESTART_COUNT"]))
