"""Process 0 of the liveness channel's benchmark, alone in its own process so that its
memory is its own.

Usage: python -m benchmarks._channel_process_zero NUM_PROCESSES

Starts process 0's liveness hub as kdist starts it (kdist._core.start_liveness_hub with a
StopBoard and a stall timeout, policy "ignore" so that a peer's death is reported, not
acted on) and prints one JSON line: its port, the nonce, and its resident memory before
(the peak, VmHWM, reset there through /proc/self/clear_refs). Then it plays process 0's
part on commands read from stdin, one per line, answering each with one JSON line:
  barrier  prints {"arriving": true}, then waits at barrier 0 "bench": {"released": ...}
  finish   finishes (through JAX's barrier): {"finished": true} once it has begun, then
           waits until every process finished: {"done": <every process took JAX's barrier>}
  exit     stops the hub and leaves.
The benchmark reads the peak memory from /proc/<pid>/status itself (a stall ends this
process).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from kdist import _core


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def _finish(channel: _core.LivenessChannel, outcomes: list[_core.FinishOutcome]) -> None:
    outcomes.append(channel.finish(True, 120.0))


def main() -> None:
    n = int(sys.argv[1])
    board = _core.StopBoard()
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts from here
    before = _kib("VmRSS")
    # Process 0's spec, as Resolve() makes it for a job of n processes (the roll call's
    # address is not used: the simulated processes join the hub directly).
    request = _core.Request()
    request.job_addresses = "127.0.0.1:1"
    request.num_processes = str(n)
    request.process_id = "0"
    request.cluster_detection = "none"
    request.on_peer_failure = "ignore"
    request.stall_timeout = "3600"
    request.unreachable_timeout = "60"
    spec = _core.resolve(request, {})
    shared = _core.JobShared()  # the hub writes its port and nonce there, for "go"
    channel = _core.start_liveness_hub(spec, board, shared)
    _say(port=shared.liveness_port, nonce=shared.liveness_nonce, rss_before_kib=before)
    for line in sys.stdin:
        command = line.strip()
        if command == "barrier":
            _say(arriving=True)
            channel.barrier("bench", 0, 120.0)
            _say(released=True)
        elif command == "finish":
            # finish() says so and waits for the others: on a thread, so that the
            # benchmark hears "finished" before it makes the others finish.
            outcomes: list[_core.FinishOutcome] = []
            waiting = threading.Thread(target=_finish, args=(channel, outcomes))
            waiting.start()
            _say(finished=True)
            waiting.join()
            _say(done=outcomes == [_core.FinishOutcome.BARRIER])
        elif command == "exit":
            break
        else:
            raise SystemExit(
                f"benchmarks/_channel_process_zero.py: expected barrier, finish or exit on "
                f"stdin, received {command!r}"
            )
    channel.stop()


if __name__ == "__main__":
    main()
