"""The drained agent's order of words (a unit test: the rendezvous is a recorder, the
attempt a stand-in). A SIGTERM reaches the agent's processes at once, and they can stop at
their agreed step before the agent's watch thread (which looks up every WATCH_SECONDS) has
told the rendezvous of the drain. The drain notice must still reach the rendezvous before
this machine's end report: with every end in and no drain known, the book would count the
stop as the job's failure (seen with `--max-restarts` spent: the job ended with 143 instead
of going on without the drained machine)."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

from kdist import _core
from kdist._agent.agent_log import AgentLog
from kdist._agent.follow import Follower
from kdist._local_job.output import Output


class _Recorder:
    """A rendezvous that records what it is told."""

    def __init__(self) -> None:
        self.told: list[tuple[int, int, bool]] = []

    def report(
        self, attempt: int, exit_status: int, *_: Any, drain: bool = False, **__: Any
    ) -> None:
        self.told.append((attempt, exit_status, drain))


def test_a_drain_not_yet_told_is_told_before_the_attempt_s_end() -> None:
    rendezvous = _Recorder()
    follower = Follower(
        command=["true"],
        rendezvous=rendezvous,  # type: ignore[arg-type]
        settings=SimpleNamespace(),  # type: ignore[arg-type]
        machine=SimpleNamespace(),  # type: ignore[arg-type]
        log=AgentLog(Output(io.BytesIO(), io.BytesIO()), None),
    )

    def run(_roster: object) -> tuple[object, bool]:
        follower.drain.handler(15, None)  # SIGTERM while the attempt runs; the watch slept
        outcome = SimpleNamespace(status=143, failure=None)
        return SimpleNamespace(outcome=outcome, progressed=True, steps=None), False

    follower._run = run  # type: ignore[method-assign]
    roster = SimpleNamespace(
        kind="roster", attempt=3, first_failure="", ended="", message="", node_rank=0
    )
    follower._act_on(roster)  # type: ignore[arg-type]
    assert rendezvous.told == [(3, int(_core.EXIT_DRAINED), True), (3, 143, False)]
    follower._act_on(roster)  # type: ignore[arg-type]  # told once only
    assert [t for t in rendezvous.told if t[2]] == [(3, int(_core.EXIT_DRAINED), True)]
