"""kdist's logger, and the waits a user sees without configuring logging.

kdist logs to `logging.getLogger("kdist")`, as Python libraries do, and configures
nothing: what it says at INFO ("roll call complete ...") stays quiet unless the program
shows it. A wait is different. A process that waits for the others (the roll call, process
0's JAX service, the job's end) says so even when the program configured no logging at all:
a first line after FIRST_SECONDS, then one every REPEAT_SECONDS, each naming who waits, for
what, what the last attempt said and how much of the deadline is spent; and so does a
line that says where a job resumed or stopped (kdist.BackupAndRestore). Such a line reaches
the user whatever configured the root logger (the program, or a library: absl's
`logging.basicConfig()`, run when JAX or Orbax is imported, leaves the root at WARNING): it
is an INFO record of the `kdist` logger when that record would be shown, else `kdist: <line>`
on stderr. Only the `kdist` logger's own configuration (a level or a handler on it) decides
otherwise:

    logging.getLogger("kdist").setLevel(logging.WARNING)   # no progress lines at all
"""

from __future__ import annotations

import logging
import sys
import threading
import time

LOGGER = logging.getLogger("kdist")

# The first progress line of a wait comes after FIRST_SECONDS (the core's progress
# interval), the next ones every REPEAT_SECONDS. Tests lower both.
FIRST_SECONDS = 5.0
REPEAT_SECONDS = 30.0


def configured_by_program(logger: logging.Logger = LOGGER) -> bool:
    """Whether the program configured logging for `logger`: a level set on it, or a
    handler on it or on a logger its records propagate to (the root logger's included)."""
    if logger.level != logging.NOTSET:
        return True
    node: logging.Logger | None = logger
    while node is not None:
        if node.handlers:
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def configured_for_kdist(logger: logging.Logger = LOGGER) -> bool:
    """Whether the program configured kdist's own logger: a level or a handler on it (or on
    a logger between it and the root), not only the root logger, which libraries configure
    too (absl's basicConfig under JAX and Orbax)."""
    node: logging.Logger | None = logger
    while node is not None and node is not logging.root:
        if node.level != logging.NOTSET or node.handlers:
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def say(line: str) -> None:
    """One line a user must see: a kdist INFO record when the program configured kdist's
    logger, or configured logging so that the record is shown; else `kdist: <line>` on
    stderr (unless logging was disabled with `logging.disable`)."""
    if configured_for_kdist() or (configured_by_program() and LOGGER.isEnabledFor(logging.INFO)):
        LOGGER.info("%s", line)
        return
    if logging.root.manager.disable >= logging.INFO:
        return
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(f"kdist: {line}\n")
        stream.flush()
    except (OSError, ValueError):  # a closed stderr must not break the wait
        pass


class Progress:
    """The progress callback of one wait: `say`s the core's lines on the cadence above
    (the core calls it every FIRST_SECONDS), each prefixed with who waits ("process 1 of
    4"; none when `who` is empty: the core's line names the process itself)."""

    def __init__(self, who: str = "") -> None:
        self._who = who
        self._lock = threading.Lock()
        self._last: float | None = None

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last < REPEAT_SECONDS - 0.5 * FIRST_SECONDS:
                return
            self._last = now
        say(f"{self._who}: {line}" if self._who else line)
