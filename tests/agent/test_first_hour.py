"""What got in a new user's way in a first multi-machine hour (issue 60), on loopback:
stopping a whole job from any machine (`kdist stop`), the rendezvous's own agent leaving
before the job formed, and a command line that says what it does."""

from __future__ import annotations

import re
import signal
import sys
import time
from pathlib import Path

import pytest

from helpers.agents import agent_args
from helpers.support import Spawned, clean_env, run_python
from kdist import _core

pytestmark = pytest.mark.multiprocess

_BOUND = 120.0


def _stop(port: int, job_id: str = "t43") -> list[str]:
    return [
        sys.executable, "-m", "kdist", "stop", "--rendezvous", f"127.0.0.1:{port}",
        "--job-id", job_id,
    ]  # fmt: skip


def test_kdist_stop_stops_the_whole_job_at_one_agreed_step_and_every_agent_leaves_143(
    tmp_path: Path,
) -> None:
    port = _core.free_port()
    env = clean_env(1, NODE_JOB_STEPS="1")
    with Spawned(tmp_path) as spawned:
        a = spawned.start(agent_args(f"127.0.0.1:{port}", "a", "--grace", "30"), env)
        assert a.wait_for_stderr("serving the nodes' rendezvous", _BOUND), a.stderr()
        b = spawned.start(agent_args(f"127.0.0.1:{port}", "b", "--grace", "30"), env)
        for agent in (a, b):  # both machines' processes step
            assert agent.wait_for_stderr("attempt 0: node", _BOUND), agent.stderr()
        deadline = time.monotonic() + _BOUND
        while not all("NODE_JOB " in x.stdout() for x in (a, b)):
            assert time.monotonic() < deadline, [x.stderr() for x in (a, b)]
            time.sleep(0.1)
        wrong = spawned.start(_stop(port, job_id="another"), clean_env(1)).finish(_BOUND)
        asked = spawned.start(_stop(port), clean_env(1)).finish(_BOUND)
        done = [x.finish(_BOUND) for x in (a, b)]
    assert wrong.returncode == 1, wrong.stderr
    assert "give kdist stop the job's --job-id" in wrong.stderr
    assert asked.returncode == 0, asked.stderr
    assert "stops at one agreed step on its 2 nodes" in asked.stderr, asked.stderr
    steps = set()
    for d in done:
        assert d.returncode == 143, d.stderr
        assert "the job was stopped by kdist stop (host " in d.stderr, d.stderr
        steps.update(re.findall(r"NODE_JOB_STOPPED (\d+)", d.stdout))
    assert len(steps) == 1, [d.stdout for d in done]  # one agreed step in every process


def test_sigterm_to_the_rendezvous_agent_while_gathering_ends_it_and_tells_the_others(
    tmp_path: Path,
) -> None:
    """The rendezvous's own agent, SIGTERMed while the job gathers, leaves at once (143);
    the agent waiting with it is told, naming why (69), instead of waiting out
    --join-timeout; and the port is free for the next start (a new agent serves it)."""
    port = _core.free_port()
    rendezvous = f"127.0.0.1:{port}"
    with Spawned(tmp_path) as spawned:
        a = spawned.start(agent_args(rendezvous, "a", nodes="3"), clean_env(1))
        assert a.wait_for_stderr("serving the nodes' rendezvous", _BOUND), a.stderr()
        b = spawned.start(agent_args(rendezvous, "b", nodes="3"), clean_env(1))
        assert a.wait_for_stderr("2 of 3 nodes joined", _BOUND), a.stderr()
        started = time.monotonic()
        a.proc.send_signal(signal.SIGTERM)
        done_a, done_b = a.finish(_BOUND), b.finish(_BOUND)
        elapsed = time.monotonic() - started
        again = spawned.start(
            agent_args(rendezvous, "c", "--join-timeout", "1", nodes="3"), clean_env(1)
        )
        done_c = again.finish(_BOUND)
    assert done_a.returncode == 143, done_a.stderr
    assert done_b.returncode == 69, done_b.stderr
    assert "the nodes' rendezvous ended while the job gathered" in done_b.stderr, done_b.stderr
    assert "node a's agent, on the rendezvous's machine, left" in done_b.stderr, done_b.stderr
    assert elapsed < 60, elapsed  # not --join-timeout's 300 s
    assert "serving the nodes' rendezvous" in done_c.stderr, done_c.stderr  # the port is free
    assert "taken here" not in done_c.stderr


def test_a_misspelled_option_is_named_with_the_one_meant() -> None:
    result = run_python(
        "from kdist._cli.main import main\n"
        "raise SystemExit(main(['launch', '--rendevous', 'h:1', '-n', '1', '--', 'true']))\n",
        env=clean_env(1),
    )
    assert result.returncode == 2, result.describe()
    assert "unknown option --rendevous; did you mean --rendezvous?" in result.stderr
    prefix = run_python(
        "from kdist._cli.main import main\n"
        "raise SystemExit(main(['launch', '--rendez', 'h:1', '--nodes', '1', '-n', '1', "
        "'--', 'true']))\n",
        env=clean_env(1),
    )
    assert prefix.returncode == 2, prefix.describe()  # a prefix is not taken for the flag
    assert "unknown option --rendez" in prefix.stderr


def test_the_help_says_what_each_command_and_flag_does() -> None:
    def helped(*args: str) -> str:
        result = run_python(
            f"from kdist._cli.main import main\nmain({list(args)!r})\n", env=clean_env(1)
        )
        return result.stdout

    top = helped("--help")
    assert "several machines" in top and "(loopback)" not in top
    assert "stop a job across machines" in top
    launch = " ".join(helped("launch", "--help").split())
    assert "to start on this machine (with --nodes: on each machine)" in launch, launch
    serve = helped("rendezvous", "serve", "--help")
    for flag in ("--port", "--host", "--nodes", "--job-id", "--last-call", "--join-timeout",
                 "--max-restarts", "--scale-up-after", "--token-file", "--log-dir"):  # fmt: skip
        described = re.search(re.escape(flag) + r"[^\n]*\n?\s+\S", serve)
        assert described, f"{flag} is not described:\n{serve}"
