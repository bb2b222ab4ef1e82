"""`kdist bench`: every process times its own initialize(); process 0 prints the table.

Run it as each process of a job — under `kdist launch`, srun, torchrun, mpirun or
with KERAS_DISTRIBUTION_* set — to see, per process, when it arrived, how long
it waited for the others in the roll call, how long JAX's own initialize took,
and how many devices it brought. The records travel through jax.distributed's
key-value store (process 0's coordination service), so nothing else is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from kdist._cli import arguments

_DESCRIPTION = """\
Run as every process of a job: each process calls kdist.initialize() (configured
as usual: arguments are not taken, so KERAS_DISTRIBUTION_*, KDIST_* or a detected
scheduler), times its phases, and sends its record to process 0 through
jax.distributed's key-value store. Process 0 prints one row per process: when it
arrived (relative to the first arrival), how long it waited in the
roll call, how long jax.distributed.initialize took, when it was ready, and its
devices (local/global). A phase that did not run (no roll call with preflight
off or a single process) shows as "-".

exit status: 0 on success, 1 when initialize() fails or (process 0) a process's
record does not arrive within the initialize() timeout.
"""

_EPILOG = """\
examples:
  kdist launch -n 4 --devices-per-process 2 -- kdist bench
  srun --ntasks=8 kdist bench
  kdist launch -n 2 -- kdist bench --json | python -m json.tool
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist bench` and its options to the `kdist` command line."""
    parser = commands.add_parser(
        "bench",
        help="time initialize() in every process of a job; process 0 prints a table",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", action="store_true", help="print the records as JSON (process 0) instead"
    )
    parser.add_argument(
        "--timeout",
        type=arguments.seconds,
        metavar="S",
        help="the deadline of initialize() (default: KDIST_INIT_TIMEOUT, else 300)",
    )
    parser.set_defaults(run=_run_from)


def _run_from(args: argparse.Namespace) -> int:
    return run(as_json=args.json, timeout=args.timeout)


_KEY = "kdist/bench/{}"


def _record() -> dict[str, object]:
    import kdist
    from kdist import _jax_backend
    from kdist._start.initialize import startup_timings

    spec = kdist.cluster_spec()
    assert spec is not None
    timings = startup_timings()
    global_devices = kdist.get_device_count()
    return {
        "process_id": spec.process_id,
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "arrived": timings["arrived"],
        "roll_call_s": timings.get("roll_call_s"),
        "jax_import_wait_s": timings.get("jax_import_wait_s"),
        "jax_initialize_s": timings.get("jax_initialize_s"),
        "total_s": timings["total_s"],
        "ready": time.time(),
        "local_devices": _jax_backend.local_device_count(),
        "global_devices": global_devices,
    }


def _seconds(value: object) -> str:
    return "-" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]


def format_table(records: list[dict[str, object]]) -> str:
    """The per-process table: arrival and readiness relative to the first arrival."""
    first = min(float(r["arrived"]) for r in records)  # type: ignore[arg-type]
    header = (
        f"{'process':>7}  {'host':<16} {'pid':>7}  {'arrival':>8}  {'wait':>7}  "
        f"{'import':>7}  {'jax init':>8}  {'ready':>8}  {'devices':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in sorted(records, key=lambda r: int(r["process_id"])):  # type: ignore[call-overload]
        arrival = float(r["arrived"]) - first  # type: ignore[arg-type]
        ready = float(r["ready"]) - first  # type: ignore[arg-type]
        lines.append(
            f"{r['process_id']!s:>7}  {str(r['host'])[:16]:<16} {r['pid']!s:>7}  "
            f"{arrival:>+8.3f}  {_seconds(r['roll_call_s']):>7}  "
            f"{_seconds(r['jax_import_wait_s']):>7}  "
            f"{_seconds(r['jax_initialize_s']):>8}  {ready:>+8.3f}  "
            f"{r['local_devices']!s:>4}/{r['global_devices']!s:<4}"
        )
    last_arrival = max(float(r["arrived"]) for r in records) - first  # type: ignore[arg-type]
    all_ready = max(float(r["ready"]) for r in records) - first  # type: ignore[arg-type]
    lines.append(
        f"{len(records)} processes: the last arrived {last_arrival:.3f} s after the first; all "
        f"were ready {all_ready:.3f} s after the first arrival, "
        f"{all_ready - last_arrival:.3f} s after the last."
    )
    lines.append(
        "arrival: when initialize() was called (seconds after the first); wait: the "
        "roll call, waiting for the others; import: importing JAX beyond what overlapped the "
        "wait; jax init: jax.distributed.initialize; ready: initialized and holding the global "
        "device list; devices: this process's / global; -: the phase did not run (no roll "
        "call: preflight off or one process; no coordinator)."
    )
    return "\n".join(lines)


def _gather(num_processes: int, timeout: float) -> tuple[list[dict[str, object]], str | None]:
    """Process 0 reads every process's record, all within one deadline of `timeout`
    seconds from now.

    Returns:
        The records in process order, and None; or the records that arrived and
        a message naming the first process whose record did not.
    """
    from kdist import _jax_backend

    deadline = time.monotonic() + timeout
    records: list[dict[str, object]] = []
    for i in range(num_processes):
        try:
            value = _jax_backend.key_value_get(
                _KEY.format(i), max(0.0, deadline - time.monotonic())
            )
        except Exception as error:  # JAX's DEADLINE_EXCEEDED and its other failures
            return records, (
                f"no record from process {i} within {timeout:g} s (the initialize() "
                f"timeout) after process 0 was ready: {type(error).__name__}: {error}. "
                f"Process {i} failed or stalled after its initialize(); see its output."
            )
        records.append(json.loads(value))
    return records, None


def run(*, as_json: bool, timeout: float | None) -> int:
    """Initializes, gathers every process's record on process 0, prints the table there.

    Returns:
        The exit status: 0 on success, 1 when initialize() fails or, on process 0,
        when a process's record does not arrive in time (the error is printed).
    """
    import kdist
    from kdist import _jax_backend

    try:
        kdist.initialize(timeout=timeout)
    except kdist.KdistError as error:
        print(f"kdist bench: initialize failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    try:
        spec = kdist.cluster_spec()
        assert spec is not None
        record = _record()
        records = [record]
        if spec.coordinator_address is not None:
            _jax_backend.key_value_set(_KEY.format(spec.process_id), json.dumps(record))
            if spec.process_id == 0:
                records, missing = _gather(spec.num_processes, spec.timeout)
                if missing is not None:
                    print(f"kdist bench: {missing}", file=sys.stderr)
                    return 1
        if spec.process_id == 0:
            print(json.dumps(records) if as_json else format_table(records), flush=True)
        return 0
    finally:
        kdist.shutdown()
