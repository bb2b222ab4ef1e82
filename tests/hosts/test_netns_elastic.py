"""Elastic `kdist launch --nodes MIN:MAX` across network-namespace hosts (issue 44): a host
whose link is cut mid-training is lost, and the others go on without it from the last
backup of a Keras model trained with kdist.BackupAndRestore, while `kdist status` on another
host shows the job gathering, running and running again after the loss (issue 55); fewer
than MIN left ends the job with 75, naming the lost node. Every namespace is checked empty at
the end (helpers/netns.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import netns
from helpers.agents import NODE_JOB, agent_args
from helpers.support import PROGRAMS, Running, Spawned, clean_env, json_objects

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

PORT = 29437
_BOUND = 300.0  # bounds every wait; nothing is timed against it
_UNREACHABLE = "5"  # KDIST_UNREACHABLE_TIMEOUT: the liveness channel's and the rendezvous's
KERAS = str(PROGRAMS / "keras_backup.py")
EPOCHS = 3
STEPS_PER_EPOCH = 16  # keras_backup.py: ROWS 64 per process, batches of 4 per process
SAVE_FREQ = 4


def _agent(rendezvous: str, index: int, nodes: str, program: str, *extra: str) -> list[str]:
    return agent_args(
        rendezvous, f"host{index}", "--grace", "10", *extra,
        nodes=nodes, job_id="t44", last_call="10", program=program,
    )  # fmt: skip


def _keras_env(backup_dir: Path, step_sleep: str = "0.2") -> dict[str, str]:
    return clean_env(
        1,
        KDIST_ROLL_CALL_TOKEN="elastic-token-0123456789",
        KDIST_UNREACHABLE_TIMEOUT=_UNREACHABLE,
        KDIST_INIT_TIMEOUT="120",
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-test-keras-home",
        BACKUP_DIR=str(backup_dir),
        BACKUP_SAVE_FREQ=str(SAVE_FREQ),
        BACKUP_EPOCHS=str(EPOCHS),
        BACKUP_STEP_SLEEP=step_sleep,
    )


def _wait_for_step(agent: Running, step: int, others: list[Running]) -> None:
    """Until `agent`'s processes printed "step N" for N >= step (every agent running)."""
    deadline = time.monotonic() + _BOUND
    while f"step {step}\n" not in agent.stdout():
        for a in others:
            assert a.proc.poll() is None, f"an agent ended early:\n{a.stderr()}"
        assert time.monotonic() < deadline, f"no step {step} within {_BOUND} s"
        time.sleep(0.1)


def _status(
    host: netns.Host, rendezvous: str, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    """`kdist status` run on `host` (its own namespace), as an operator would."""
    argv = [sys.executable, "-m", "kdist", "status", "--rendezvous", rendezvous,
            "--job-id", "t44", *extra]  # fmt: skip
    return subprocess.run(host.command(argv), env=env, capture_output=True, text=True, timeout=60)


def _json_status(host: netns.Host, rendezvous: str, env: dict[str, str]) -> dict[str, object]:
    done = _status(host, rendezvous, env, "--json")
    assert done.returncode == 0, done.stderr
    value = json.loads(done.stdout)
    assert isinstance(value, dict)
    return value


def test_a_host_cut_mid_training_the_two_others_finish_from_the_last_backup(
    tmp_path: Path,
) -> None:
    backup_dir = tmp_path / "backup"
    with netns.hosts(3) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT}"
        env = _keras_env(backup_dir)
        logs = tmp_path / "logs"

        def start(i: int) -> Running:
            logged = ["--log-dir", str(logs)] if i == 0 else []
            argv = _agent(rendezvous, i, "2:3", KERAS, "--join-timeout", "120", *logged)
            return spawned.start(hosts[i].command(argv), env)

        agents = [start(0)]
        # Gathering: host0 alone (the job forms at 3 nodes, or 10 s after the second).
        deadline = time.monotonic() + _BOUND
        while not (gathering := _json_status(hosts[1], rendezvous, env))["nodes"]:
            assert time.monotonic() < deadline, agents[0].stderr()
            time.sleep(0.2)
        assert gathering["state"] == "gathering" and gathering["attempt"] is None, gathering
        node = gathering["nodes"][0]  # type: ignore[index]
        assert node["name"] == "host0" and node["address"] == hosts[0].address, gathering
        agents += [start(1), start(2)]
        # Mid-training, after a committed backup: the cut lands between two saves.
        _wait_for_step(agents[0], 2 * SAVE_FREQ + 2, agents)
        running = _json_status(hosts[1], rendezvous, env)
        assert running["state"] == "running" and running["attempt"] == 0, running
        assert running["processes"] == 3 and running["restarts"] == {}, running
        by_name = {n["name"]: n for n in running["nodes"]}  # type: ignore[union-attr]
        assert {n: by_name[n]["address"] for n in by_name} == {
            f"host{i}": hosts[i].address for i in range(3)
        }, running
        table = _status(hosts[1], rendezvous, env)
        assert table.returncode == 0, table.stderr
        assert "job 't44': running, attempt 0, 3 processes" in table.stdout, table.stdout
        hosts[2].set_link(False)  # no FIN, no RST: the host is gone
        # After the loss: attempt 1 runs on host0 and host1; the restart's cause is named.
        while (after := _json_status(hosts[1], rendezvous, env))["attempt"] != 1:
            assert time.monotonic() < deadline + _BOUND, after
            assert agents[0].proc.poll() is None, agents[0].stderr()
            time.sleep(0.2)
        assert after["processes"] == 2 and after["restarts"] == {"node_lost": 1}, after
        assert [n["name"] for n in after["nodes"]] == ["host0", "host1"], after  # type: ignore[union-attr]
        table = _status(hosts[1], rendezvous, env)
        assert "restarts: node_lost 1" in table.stdout, table.stdout
        done = [a.finish(_BOUND) for a in agents]
    for i in (0, 1):
        assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
    assert done[2].returncode == 69, done[2].stderr
    assert "lost the nodes' rendezvous" in done[2].stderr
    assert "node lost: node host2" in done[0].stderr
    assert "not counted against --max-restarts" in done[0].stderr  # the attempts' table
    for i in (0, 1):  # the survivors' next attempt starts in their warm spares (issue 54)
        line = next(x for x in done[i].stderr.splitlines() if f"attempt 1: node {i} of 2" in x)
        assert "; warm: " in line, done[i].stderr
    table = json.loads((logs / "attempts.json").read_text())
    assert table["exit_status"] == 0
    (lost, finished) = table["attempts"]
    assert lost["nodes"][0] == "host0" and lost["processes"] == 3, lost  # node 0: rendezvous's
    assert sorted(lost["nodes"]) == ["host0", "host1", "host2"], lost
    assert lost["ended"].startswith("node lost: node host2") and not lost["counted"], lost
    assert finished["nodes"] == ["host0", "host1"] and finished["ended"] == "finished", finished
    assert lost["ended_seconds"] <= finished["started_seconds"], table
    for i in (0, 1):
        reports = [r for r in json_objects(done[i].stdout) if "restart_count" in r]
        final = reports[-1]
        assert final["error"] is None, final
        assert final["restart_count"] == 1, final  # the next attempt, KDIST_RESTART_COUNT 1
        assert final["num_processes"] == 2, final  # at its new size
        assert final["previous_num_processes"] == 3, final
        assert final["process_id"] == i, final  # the survivors keep their order
        # Resumed from the last committed backup (a multiple of save_freq, before the cut),
        # and ended at the right step: every batch of every epoch trained once.
        restored = final["restored_step"]
        assert isinstance(restored, int) and restored >= SAVE_FREQ, final
        assert restored % SAVE_FREQ == 0, final
        assert final["iterations_at_start"] == restored, final
        assert final["iterations"] == EPOCHS * STEPS_PER_EPOCH, final


def test_fewer_than_min_left_ends_with_75_naming_the_lost_node(tmp_path: Path) -> None:
    with netns.hosts(2) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT + 1}"
        env = clean_env(
            1,
            KDIST_ROLL_CALL_TOKEN="elastic-token-0123456789",
            KDIST_UNREACHABLE_TIMEOUT=_UNREACHABLE,
            NODE_JOB_SLEEP="600",
        )
        agents = [
            spawned.start(
                hosts[i].command(_agent(rendezvous, i, "2:2", NODE_JOB, "--join-timeout", "15")),
                env,
            )
            for i in range(2)
        ]
        deadline = time.monotonic() + _BOUND  # until both processes ran their collective
        while not all("NODE_JOB" in a.stdout() for a in agents):
            assert time.monotonic() < deadline, [a.stderr() for a in agents]
            time.sleep(0.1)
        hosts[1].set_link(False)
        done = [a.finish(_BOUND) for a in agents]
    assert done[0].returncode == 75, done[0].stderr
    assert done[1].returncode == 69, done[1].stderr
    # Named: the node, its host, since when.
    assert "gathering again" in done[0].stderr
    assert "the job had lost node host1 (host " in done[0].stderr
    assert f"at {hosts[1].address}) lost since" in done[0].stderr
    assert "(--join-timeout)" in done[0].stderr


def test_one_agent_drained_the_job_stops_at_one_step_and_goes_on_without_it(
    tmp_path: Path,
) -> None:
    backup_dir = tmp_path / "backup"
    with netns.hosts(3) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT + 2}"
        env = _keras_env(backup_dir)
        agents = [
            spawned.start(
                hosts[i].command(_agent(rendezvous, i, "2:3", KERAS, "--join-timeout", "120")),
                env,
            )
            for i in range(3)
        ]
        _wait_for_step(agents[0], SAVE_FREQ + 2, agents)
        agents[1].proc.send_signal(signal.SIGTERM)  # a spot notice: host1 leaves
        done = [a.finish(_BOUND) for a in agents]
    assert done[1].returncode == 143, done[1].stderr
    assert "this machine is drained" in done[1].stderr
    for i in (0, 2):
        assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
    assert "drained: node host1" in done[0].stderr
    first = [r for r in json_objects(done[0].stdout) if r.get("restart_count") == 0]
    final = [r for r in json_objects(done[0].stdout) if "iterations" in r][-1]
    # Attempt 0 stopped at one agreed step with a save there; attempt 1 began exactly there.
    stopped = first[0]["stopped_step"]
    assert isinstance(stopped, int) and stopped > SAVE_FREQ, first[0]
    assert final["restart_count"] == 1, final
    assert final["num_processes"] == 2, final
    assert final["restored_step"] == stopped, final
    assert final["iterations_at_start"] == stopped, final
    assert final["iterations"] == EPOCHS * STEPS_PER_EPOCH, final
    last = [r for r in json_objects(done[2].stdout) if "iterations" in r][-1]
    assert last["process_id"] == 1, last  # host2 is node 1 now


def test_a_machine_arriving_the_job_stops_at_one_step_and_finishes_at_three(
    tmp_path: Path,
) -> None:
    backup_dir = tmp_path / "backup"
    with netns.hosts(3) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT + 3}"
        env = _keras_env(backup_dir, step_sleep="0.5")  # room for the third to arrive
        growth = ("--join-timeout", "120", "--scale-up-after", "2")
        agents = [
            spawned.start(hosts[i].command(_agent(rendezvous, i, "2:3", KERAS, *growth)), env)
            for i in (0, 1)
        ]
        _wait_for_step(agents[0], 2, agents)  # the job runs at 2 nodes
        agents.append(spawned.start(hosts[2].command(_agent(rendezvous, 2, "2:3", KERAS)), env))
        done = [a.finish(_BOUND) for a in agents]
    for i in range(3):
        assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
    assert "ended: node host2" in done[0].stderr
    first = [r for r in json_objects(done[0].stdout) if r.get("restart_count") == 0]
    final = [r for r in json_objects(done[0].stdout) if "iterations" in r][-1]
    assert first[0]["num_processes"] == 2, first[0]
    stopped = first[0]["stopped_step"]
    assert isinstance(stopped, int) and stopped >= 2, first[0]
    # The next attempt: 3 processes, from exactly the agreed stop step, to the right end.
    assert final["restart_count"] == 1, final
    assert final["num_processes"] == 3, final
    assert final["restored_step"] == stopped, final
    assert final["iterations_at_start"] == stopped, final
    assert final["iterations"] == EPOCHS * STEPS_PER_EPOCH, final
    last = [r for r in json_objects(done[2].stdout) if "iterations" in r][-1]
    assert last["process_id"] == 2, last
    assert last["iterations"] == EPOCHS * STEPS_PER_EPOCH, last
