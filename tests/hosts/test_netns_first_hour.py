"""A first multi-machine hour on network-namespace hosts (issue 60): each machine given a
loopback --rendezvous serves a job of its own there, and two such jobs pointed at one
backup folder do not both train (the second is refused before its first step, naming the
first); an agent off loopback with a guessable token is refused, saying how to make one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers import netns
from helpers.agents import agent_args
from helpers.support import PROGRAMS, Spawned, clean_env

pytestmark = [
    pytest.mark.multiprocess,
    pytest.mark.skipif(
        netns.unavailable_reason() is not None, reason=str(netns.unavailable_reason())
    ),
]

PORT = 29461
_BOUND = 240.0
KERAS = str(PROGRAMS / "keras_backup.py")


def test_two_machines_each_given_loopback_make_two_jobs_and_the_second_is_refused(
    tmp_path: Path,
) -> None:
    backup_dir = tmp_path / "backup"  # one folder both "machines" see
    env = clean_env(
        1,
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-test-keras-home",
        BACKUP_DIR=str(backup_dir),
        BACKUP_SAVE_FREQ="4",
        BACKUP_EPOCHS="30",  # trains long enough for the second job to arrive
        BACKUP_STEP_SLEEP="0.1",
    )
    rendezvous = f"127.0.0.1:{PORT}"  # each machine's own loopback
    with netns.hosts(2) as hosts, Spawned(tmp_path) as spawned:
        first = spawned.start(
            hosts[0].command(agent_args(rendezvous, "h0", "--grace", "5", nodes="1:2",
                                        program=KERAS)),
            env,
        )  # fmt: skip
        deadline = time.monotonic() + _BOUND
        while "step 1\n" not in first.stdout():
            assert first.proc.poll() is None, first.stderr()
            assert time.monotonic() < deadline, first.stderr()
            time.sleep(0.1)
        second = spawned.start(
            hosts[1].command(agent_args(rendezvous, "h1", "--grace", "5", "--last-call", "1",
                                        nodes="1:2", program=KERAS)),
            env,
        ).finish(_BOUND)  # fmt: skip
        still_training = first.proc.poll() is None
        first.kill()
    for agent_err in (first.stderr(), second.stderr):
        assert "is a loopback address: only agents on this machine can join" in agent_err
    assert still_training, first.stderr()  # the first job was not disturbed
    assert second.returncode != 0, second.stderr
    assert f"backup_dir {backup_dir} is held by another job that trains now" in second.stderr
    assert "a loopback address makes each machine a job of its own" in second.stderr
    assert "step 1\n" not in second.stdout  # refused before its first step


def test_a_short_token_off_loopback_is_refused_saying_how_to_make_one(tmp_path: Path) -> None:
    with netns.hosts(1) as hosts, Spawned(tmp_path) as spawned:
        args = agent_args(f"{hosts[0].address}:{PORT}", "h0", nodes="1")
        done = spawned.start(
            hosts[0].command(args), clean_env(1, KDIST_ROLL_CALL_TOKEN="short")
        ).finish(60)
    assert done.returncode == 2, done.stderr
    assert "is 5 bytes; expected at least 16 off loopback" in done.stderr, done.stderr
    assert "secrets.token_hex(16)" in done.stderr
    assert "short" not in done.stderr.replace("a short one", "")  # the token is never shown
