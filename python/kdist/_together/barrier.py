"""kdist.barrier(name, timeout=): every process waits until all reached it, over the
liveness channel (not a JAX collective, so it works while the devices are busy or hung)."""

from __future__ import annotations

import itertools
import math
import threading

from kdist._errors import ArgumentTypeError
from kdist._together import stop

_lock = threading.Lock()
# This process's barrier calls, numbered: the n-th call of every process meets the n-th
# call of the others (their names must match).
_calls = itertools.count()


def barrier(name: str, *, timeout: float | None = None) -> None:
    """Returns once every process of the job has reached the barrier `name`.

    The n-th `barrier` call of each process meets the n-th call of every other
    process; they must have the same name. It runs over kdist's liveness channel, not a
    JAX collective, so it works while the devices are busy or hung, and it counts as
    progress for the stall watchdog. A process outside any job returns at once.

    Args:
        name: The barrier's name ("checkpoint saved"); the same in every process.
        timeout: Seconds to wait. Defaults to None: the initialize timeout
            (`KDIST_INIT_TIMEOUT`, else 300).

    Raises:
        kdist.BarrierTimeoutError: not every process arrived in time; raised in every
            waiting process, naming the processes (and hosts) that did not arrive and
            how long it waited. Also a TimeoutError.
        kdist.BarrierError: processes met at barriers of different names (both names,
            and which processes are at each), or a process finished without reaching
            it.
        kdist.ArgumentTypeError: `name` is not a string or `timeout` not a number.
        ValueError: `timeout` is not positive.

    Example:
        >>> import kdist
        >>> kdist.barrier("ready", timeout=10)
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"barrier: name must be a string, the same in every process. Received: {name!r} "
            f"of type {type(name).__name__}"
        )
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ArgumentTypeError(
                f"barrier: timeout must be a number of seconds or None. Received: "
                f"{timeout!r} of type {type(timeout).__name__}"
            )
        if not timeout > 0 or math.isinf(timeout):
            raise ValueError(
                f"barrier: timeout must be a positive, finite number of seconds. Received: "
                f"timeout={timeout!r}"
            )
    channel = stop.channel()
    seconds = float(timeout) if timeout is not None else stop.job_timeout()
    with _lock:
        index = next(_calls)
    if channel is not None:
        channel.barrier(name, index, seconds)
