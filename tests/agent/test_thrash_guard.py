"""The thrash guard counts re-forms without progress (issue 59): agents on loopback, one
machine lost (its agent SIGKILLed: its processes die with it, its connection closes) and
back again and again, with `--max-reforms 1`. A job whose attempts step on between the
re-forms is never ended by the guard; one whose attempts never report a step is, naming
the guard's settings and every cause. The words match the event: a loss or a growth says
"attempt N ended: ...", never "the job's first failure"."""

from __future__ import annotations

import itertools
import re
import statistics
import sys
import time
from pathlib import Path

import pytest

from helpers.agents import agent_args, node_job_reports
from helpers.support import PROGRAMS, Running, Spawned, clean_env, json_objects, wait_until_gone
from kdist import _core

pytestmark = pytest.mark.multiprocess

_BOUND = 180.0
_GUARD = ("--max-reforms", "1", "--reform-window", "600", "--scale-up-after", "1")


def _wait_for(
    agent: Running, pattern: str, count: int, others: list[Running], stdout: bool = False
) -> None:
    """Until `pattern` appears `count` times in the agent's stderr (stdout) (bounded)."""
    deadline = time.monotonic() + _BOUND
    while len(re.findall(pattern, agent.stdout() if stdout else agent.stderr())) < count:
        assert agent.proc.poll() is None, agent.stderr()
        assert time.monotonic() < deadline, [a.stderr() for a in [agent, *others]]
        time.sleep(0.1)


def _attempt_runs(a: Running, attempt: int, b: Running | None = None) -> None:
    """Attempt `attempt` started on a (and on b), and a's processes ran their collective."""
    _wait_for(a, rf"attempt {attempt}: node 0 of", 1, [] if b is None else [b])
    if b is not None:
        _wait_for(b, rf"attempt {attempt}: node 1 of", 1, [a])
    _wait_for(a, r"NODE_JOB ", attempt + 1, [], stdout=True)  # one report an attempt


def _lose_and_bring_back(
    spawned: Spawned,
    agents: tuple[Running, Running],
    args: list[str],
    env: dict[str, str],
    attempt: int,
) -> Running:
    """b's machine lost during `attempt` (its agent SIGKILLed), then back (a new agent
    under the same name): the job re-forms twice. Returns the new agent."""
    a, b = agents
    b.kill()
    _attempt_runs(a, attempt + 1)  # a alone
    back = spawned.start(args, env)
    _attempt_runs(a, attempt + 2, back)  # the growth: both again
    return back


def _job(program: str | None = None) -> tuple[str, list[str], list[str]]:
    """The rendezvous address, and agents a's and b's commands (a serves the rendezvous)."""
    rendezvous = f"127.0.0.1:{_core.free_port()}"
    extra = ("--grace", "10", "--join-timeout", "60", *_GUARD)
    chosen = {} if program is None else {"program": program}
    a = agent_args(rendezvous, "a", *extra, nodes="1:2", job_id="t59", **chosen)
    b = agent_args(rendezvous, "b", *extra, nodes="1:2", job_id="t59", **chosen)
    return rendezvous, a, b


def test_a_job_that_steps_on_between_re_forms_is_never_ended_by_the_guard(
    tmp_path: Path,
) -> None:
    # Every process steps through kdist.should_stop (no backups: progress is a step past
    # the first) until the job stops: four re-forms, three more than --max-reforms 1.
    env = clean_env(1, NODE_JOB_STEPS="1")
    rendezvous, a_args, b_args = _job()
    with Spawned(tmp_path) as spawned:
        a = spawned.start(a_args, env)
        _wait_for(a, r"serving the nodes' rendezvous", 1, [])
        b = spawned.start(b_args, env)
        _attempt_runs(a, 0, b)
        time.sleep(1.0)  # the processes step on (their progress is written)
        b = _lose_and_bring_back(spawned, (a, b), b_args, env, 0)
        time.sleep(1.0)
        b = _lose_and_bring_back(spawned, (a, b), b_args, env, 2)
        # Attempt 4 runs: the guard did not end the job after four re-forms.
        stop = [sys.executable, "-m", "kdist", "stop", "--rendezvous", rendezvous]
        spawned.start([*stop, "--job-id", "t59"], env).finish(60)
        done = [x.finish(_BOUND) for x in (a, b)]
    for d in done:
        assert d.returncode == 143, d.stderr
    said = done[0].stderr
    assert "thrash guard ends" not in said
    assert "the job's first failure" not in said, said  # a loss and a growth are no failure
    assert re.search(r"attempt 0 ended: node lost: node b", said), said
    assert re.search(r"attempt 1 ended: node b joined \(host [^)]*\)", said), said
    assert "more than 1 re-forms without progress (--max-reforms) within 600 s" in said
    # Every process sees the job's guard, with the variable the agent set as its source.
    reports = node_job_reports(done[0].stdout)
    assert len(reports) == 5, done[0].stdout  # one an attempt, attempts 0 to 4
    for report in reports:
        assert report["guard"] == {
            "max_reforms": [1, "KDIST_MAX_REFORMS"],
            "reform_window": [600.0, "KDIST_REFORM_WINDOW"],
        }, report
    pids = [int(p) for d in done for p in re.findall(r"\(pids (\d+)\)", d.stderr)]
    assert pids and not wait_until_gone(pids, 30)


def test_a_job_that_never_steps_is_ended_by_the_guard_naming_it(tmp_path: Path) -> None:
    # The processes never report a step (they sleep after their collective): no attempt
    # gets anywhere, and the second re-form is one more than --max-reforms 1.
    env = clean_env(1, NODE_JOB_SLEEP="600")
    _, a_args, b_args = _job()
    with Spawned(tmp_path) as spawned:
        a = spawned.start(a_args, env)
        _wait_for(a, r"serving the nodes' rendezvous", 1, [])
        b = spawned.start(b_args, env)
        _attempt_runs(a, 0, b)
        b.kill()
        _attempt_runs(a, 1)
        back = spawned.start(b_args, env)
        done = [x.finish(_BOUND) for x in (a, back)]
    for d in done:
        assert d.returncode == 1, d.stderr
    said = done[0].stderr
    assert (
        "the job re-formed 2 times within 600 s without progress (more than --max-reforms 1 "
        "within --reform-window 600 s, none of them after a backup saved or a step past its "
        "start: the thrash guard ends it): attempt 0: node lost: node b"
    ) in said, said
    assert re.search(r"attempt 1: node b joined \(host [^)]*\)", said), said
    assert "the job's first failure" not in said, said


_EPOCHS = 5
_STEPS = _EPOCHS * 16  # keras_backup.py: 16 batches an epoch at any process count


def test_a_keras_job_that_saves_between_re_forms_finishes_and_says_its_goodput(
    tmp_path: Path,
) -> None:
    # Issue 59's spot user, on loopback: b lost twice and back twice (four re-forms, three
    # more than --max-reforms 1), every attempt saving backups (every 4 steps) between them;
    # the job finishes every step, exit 0. Goodput: kept steps x the fault-free step time
    # (the last attempt's median batch) / the wall time from the first agent's start.
    env = clean_env(
        1,
        KDIST_INIT_TIMEOUT="120",
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-test-keras-home",
        BACKUP_DIR=str(tmp_path / "backup"),
        BACKUP_SAVE_FREQ="4",
        BACKUP_EPOCHS=str(_EPOCHS),
        BACKUP_STEP_SLEEP="0.2",
        BACKUP_NO_VALUES="1",
    )
    _, a_args, b_args = _job(str(PROGRAMS / "keras_backup.py"))
    began = time.monotonic()
    with Spawned(tmp_path) as spawned:
        a = spawned.start(a_args, env)
        _wait_for(a, r"serving the nodes' rendezvous", 1, [])
        b = spawned.start(b_args, env)
        for attempt in range(4):  # each attempt trains 7 steps (a save among them), then:
            _wait_for(a, r"\[0\] step 7\n", attempt + 1, [b], stdout=True)
            if attempt % 2 == 0:
                b.kill()  # lost
            else:
                b = spawned.start(b_args, env)  # back: the job grows after 1 s
        done = [x.finish(_BOUND) for x in (a, b)]
    wall = time.monotonic() - began
    for d in done:
        assert d.returncode == 0, d.stderr
    said = done[0].stderr
    assert "thrash guard" not in said.split("\n", 1)[1], said  # its first line names it
    assert len(re.findall(r"attempt \d ended: ", said)) == 4, said
    final = [r for r in json_objects(done[0].stdout) if "iterations" in r][-1]
    assert final["iterations"] == _STEPS, final
    assert final["restart_count"] == 4, final
    ends = final["batch_ends"]
    assert isinstance(ends, list) and len(ends) > 3
    step_seconds = statistics.median(later - sooner for sooner, later in itertools.pairwise(ends))
    goodput = _STEPS * step_seconds / wall
    print(  # the closing note's figure (pytest -s)
        f"goodput {goodput:.2f}: {_STEPS} steps kept x {step_seconds:.3f} s fault-free step / "
        f"{wall:.1f} s wall, four re-forms"
    )
    assert 0 < goodput <= 1
