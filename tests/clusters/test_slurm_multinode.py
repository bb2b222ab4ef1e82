"""kdist under a real multi-node Slurm: scripts/slurm.sh --nodes 2 (slurm-wlm 22.05, munge, no
cgroups), each node's slurmd in a network namespace of its own (node1 at 10.77.0.1, node2 at
10.77.0.2, on a bridge whose .254 is slurmctld's), real srun steps and sbatch jobs across
the nodes.

What several nodes add to test_slurm.py's one: SLURM_STEP_NODELIST lists two hosts, the
coordinator is the first node's name, which each task resolves (/etc/hosts, as a cluster's
DNS would) to an address the other node reaches, and every task has its own host's
address: the roll call, JAX's service, the collectives and the liveness channel all cross
the bridge. Every node shares this machine's host name, which resolves to loopback (as on a
Debian host): what a collective must not advertise.

Every task is a real process on JAX's CPU backend; every wait is bounded; each test cancels
what it submitted, and the node-loss test brings the node's link back. The figures are
printed: `pytest -m slurm -s tests/clusters/test_slurm_multinode.py` shows them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.slurm_cluster import Cluster
from helpers.slurm_events import (
    STEP_SECONDS,
    WORKER,
    assert_resumed_as_uninterrupted,
    assert_stopped_together,
    event,
    events,
    figure,
    keras_batch_script,
    keras_env,
    keras_report,
    run_keras_reference,
    started_at,
    submit,
    task_files,
    task_output,
    wait_events,
    wait_gone,
    wait_reports,
)
from helpers.support import KDIST_SCRIPT, PROGRAMS, json_objects, object_in

pytestmark = pytest.mark.slurm

NODES = 2  # the slurm fixture's cluster (tests/clusters/conftest.py)
# The lost-host window: a host that vanishes is named unreachable within it
# (docs/configuration.md, "A lost host").
LOST_HOST_SECONDS = 20


def across(tasks: int) -> list[str]:
    """srun/sbatch options for `tasks` tasks spread over both nodes (block distribution:
    the first half on node1)."""
    options = [f"-N{NODES}", f"-n{tasks}"]
    return options if tasks <= NODES else [*options, "--overcommit"]


def node_of(task: int, tasks: int) -> str:
    return f"node{1 + task * NODES // tasks}"


def reports(directory: Path, tasks: int) -> list[dict[str, object]]:
    """Each task's last stdout line, a JSON report."""
    out = []
    for task in range(tasks):
        stdout, stderr = task_output(directory, task)
        found = json_objects(stdout)
        assert found, (task, stdout[-2000:], stderr[-4000:])
        out.append(found[-1])
    return out


def outputs(directory: Path, tasks: int) -> str:
    """The tail of each task's output and errors (for a failure's message)."""
    parts = []
    for task in range(tasks):
        try:
            out, err = task_output(directory, task)
        except FileNotFoundError:
            out, err = "(none)", ""
        parts.append(f"--- task {task}:\n{out[-1500:]}\n{err[-3000:]}")
    return "\n".join(parts)


def step_ended(proc: subprocess.Popen[str]) -> str | None:
    code = proc.poll()
    return None if code is None else f"the step ended with status {code}"


def job_ended(slurm: Cluster, job_id: str) -> str | None:
    state = slurm.job(job_id).get("JobState")
    return None if state in ("PENDING", "RUNNING", "CONFIGURING") else f"the job is {state}"


# --- starting -----------------------------------------------------------------------------


@pytest.mark.parametrize("tasks", [2, 4], ids=["N2n2", "N2n4-overcommit"])
def test_srun_alone_configures_the_job_across_the_nodes(
    slurm: Cluster, tmp_path: Path, tasks: int
) -> None:
    env = slurm.env(SLURM_TEST_MODE="report", SLURM_TEST_DIR=str(tmp_path))
    started = time.monotonic()
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [sys.executable, WORKER],
            env=env,
            options=[*across(tasks), *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    seconds = time.monotonic() - started
    assert result.returncode == 0, (result.stderr, outputs(tmp_path, tasks))
    got = reports(tmp_path, tasks)
    first = slurm.nodes[0]
    port = 61440 + int(str(got[0]["job_id"])) % 4096  # as JAX derives it
    # The first node's name, which every task resolves to its address on the bridge.
    assert socket.gethostbyname(first.name) == first.address
    for task, report in enumerate(got):
        assert report["process_id"] == task == int(str(report["slurm_procid"]))
        assert report["node"] == node_of(task, tasks), report
        assert report["num_processes"] == tasks
        assert report["scheduler"] == "slurm"
        assert report["coordinator"] == f"{first.name}:{port}"
        assert report["devices"] == 2 * tasks and report["local_devices"] == 2
        sources = report["sources"]
        assert isinstance(sources, dict)
        assert sources["job_addresses"] == "slurm (SLURM_STEP_NODELIST, SLURM_JOB_ID)"
        assert sources["num_processes"] == "slurm (SLURM_STEP_NUM_TASKS)"
        assert sources["process_id"] == "slurm (SLURM_PROCID)"
    figure(
        f"srun {' '.join(across(tasks))}: every task's coordinator {first.name}:{port} "
        f"({first.address}), from SLURM_STEP_NODELIST; the step took {seconds:.1f} s"
    )


def test_kdist_doctor_under_srun_on_every_node(slurm: Cluster, tmp_path: Path) -> None:
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [str(KDIST_SCRIPT), "doctor", "--json"],
            env=slurm.env(),
            options=[*across(2), *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    assert result.returncode == 0, (result.stderr, outputs(tmp_path, 2))
    first = slurm.nodes[0]
    for task in range(2):
        report = json.loads(task_output(tmp_path, task)[0])
        assert report["ok"] is True, report["error"]
        assert report["scheduler"] == "slurm"
        config = report["config"]
        assert (config["process_id"], config["num_processes"]) == (task, 2)
        assert config["coordinator_address"].startswith(f"{first.name}:"), config
        assert config["sources"]["job_addresses"] == "slurm (SLURM_STEP_NODELIST, SLURM_JOB_ID)"
        # The probe reached the first node's address from either node: nothing listens
        # there yet (the doctor starts no job), and the host answered so.
        assert report["probe"]["status"] == "refused", report["probe"]
        # The collectives would advertise this task's own node's address (the one that
        # reaches node1), not its host name's, which resolves to loopback.
        chosen = report["collectives"]
        assert chosen["address"] == slurm.nodes[task].address, chosen
        assert chosen["host_name_addresses"] == ["127.0.0.1"], chosen


def test_kdist_launch_nodes_with_rendezvous_auto_under_srun(slurm: Cluster, tmp_path: Path) -> None:
    """One agent per node (`srun --ntasks-per-node=1 kdist launch --nodes 2 -n 2
    --rendezvous auto`): node1's agent serves the rendezvous (it owns the allocation's first
    host), node2's joins it, and their four processes gather across the bridge. The nodes
    share one host name: each agent's name is Slurm's SLURMD_NODENAME."""
    env = slurm.env(KDIST_ROLL_CALL_TOKEN="slurm-nodes-token")
    agent = [
        str(KDIST_SCRIPT), "launch", "--nodes", "2", "-n", "2", "--devices-per-process", "1",
        "--rendezvous", "auto", "--last-call", "2", "--join-timeout", "60",
        "--", sys.executable, str(PROGRAMS / "node_job.py"),
    ]  # fmt: skip
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            agent,
            env=env,
            options=[f"-N{NODES}", "--ntasks-per-node=1", *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    assert result.returncode == 0, (result.stderr, outputs(tmp_path, 2))
    first = slurm.nodes[0]
    found: dict[int, dict[str, object]] = {}
    for task in range(NODES):
        stdout, stderr = task_output(tmp_path, task)
        node = slurm.nodes[task]
        assert f"attempt 0: node {task} of 2 ({node.name})" in stderr, stderr
        for line in stdout.splitlines():
            report = object_in(line.split("NODE_JOB ", 1)[-1]) if "NODE_JOB " in line else None
            if report is not None:
                process_id = report["process_id"]
                assert isinstance(process_id, int)
                assert line.startswith(f"[{process_id}] "), line  # job-wide ids
                assert process_id // 2 == task, (task, report)  # node r runs 2r, 2r+1
                found[process_id] = report
    assert sorted(found) == [0, 1, 2, 3], outputs(tmp_path, 2)
    served = task_output(tmp_path, 0)[1]
    assert f"serving the nodes' rendezvous on {first.address}:" in served, served
    for process_id, report in found.items():
        assert report["gathered"] == [0, 1, 2, 3]
        assert report["num_processes"] == 4
        variables = report["variables"]
        assert isinstance(variables, dict)
        # The coordinator is node 0's address as the other agent reached it, an IP.
        assert str(variables["KERAS_DISTRIBUTION_JOB_ADDRESSES"]).startswith(f"{first.address}:")
        place = report["place"]
        assert isinstance(place, dict)
        assert place["node_rank"] == [process_id // 2, "KDIST_NODE_RANK"]
        assert place["num_nodes"] == [2, "KDIST_NUM_NODES"]
        assert place["local_process_id"] == [process_id % 2, "KDIST_LOCAL_PROCESS_ID"]
        job_id = place["job_id"]
        assert isinstance(job_id, list) and job_id[1] == "KDIST_JOB_ID"
        assert str(job_id[0]).isdigit(), job_id  # the allocation's SLURM_JOB_ID
    figure(
        f"srun -N{NODES} --ntasks-per-node=1 kdist launch --nodes 2 -n 2 --rendezvous auto: "
        f"4 processes gathered across the nodes, coordinator on {first.address}"
    )


# --- computing across the nodes -----------------------------------------------------------


def test_collectives_cross_the_nodes(slurm: Cluster, tmp_path: Path) -> None:
    env = slurm.env(SLURM_TEST_MODE="collectives", SLURM_TEST_DIR=str(tmp_path))
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [sys.executable, WORKER],
            env=env,
            options=[*across(2), *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    assert result.returncode == 0, (result.stderr, outputs(tmp_path, 2))
    for task, report in enumerate(reports(tmp_path, 2)):
        assert report["node"] == node_of(task, 2)
        assert report["allgather"] == [0, 1], report
        assert report["devices"] == 4
        assert report["psum"] == 1 + 2 + 3 + 4, report


@pytest.fixture(scope="module")
def keras_reference(slurm: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted Keras fit with kdist.DataParallel across both nodes (keras_backup.py
    without a backup): the main job, and the result a resumed job must end with."""
    directory = tmp_path_factory.mktemp("keras-reference")
    with slurm.jobs() as jobs:
        run_keras_reference(slurm, jobs.new(), directory, across(2), 2 * STEP_SECONDS)
    return directory


def test_the_keras_main_job_trains_alike_on_every_node(keras_reference: Path) -> None:
    got = [keras_report(keras_reference, i, "reference") for i in range(2)]
    losses = [report["loss"] for report in got]
    assert isinstance(losses[0], list) and len(losses[0]) == 3, got[0]
    # One model across the nodes: each node fed its own half of every batch, and every
    # node saw the same losses and ends with the same weights.
    assert losses[0] == losses[1]
    assert losses[0][-1] < losses[0][0]
    assert got[0]["weights"] == got[1]["weights"]
    figure(f"Keras fit, kdist.DataParallel across node1 and node2: losses {losses[0]} on both")


# --- failing and stopping -----------------------------------------------------------------


def test_a_task_that_raises_on_node2_is_named_on_node1(slurm: Cluster, tmp_path: Path) -> None:
    env = slurm.env(SLURM_TEST_MODE="fail", SLURM_TEST_WHO="1", SLURM_TEST_DIR=str(tmp_path))
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [sys.executable, WORKER],
            env=env,
            options=[*across(2), *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    ended = time.time()
    assert result.returncode != 0
    failing = event(tmp_path, 1, "failing")
    assert failing is not None, (events(tmp_path, 1), outputs(tmp_path, 2))
    assert "srun: error: node2: task 1: Exited with exit code 1" in result.stderr, result.stderr
    # The line that names it, on node1 (its host: the name task 1 had on node2).
    named = [
        line
        for line in task_output(tmp_path, 0)[1].splitlines()
        if line.startswith("kdist: process 1 (host ")
        and f", pid {failing['pid']}) failed first: RuntimeError: injected failure at step 20"
        in line
    ]
    assert named, outputs(tmp_path, 2)
    seconds = ended - float(str(failing["time"]))
    figure(f"task 1 raised on node2: the step ended {seconds:.2f} s later, node1's task naming it")
    assert seconds < 10


def test_scancel_stops_every_task_on_every_node_at_one_step(slurm: Cluster, tmp_path: Path) -> None:
    with slurm.jobs() as jobs:
        job_id = submit(
            slurm,
            jobs.new(),
            tmp_path,
            across(2),
            SLURM_TEST_STEPS="1000000",
            SLURM_TEST_SAVE_SECONDS="1",  # a checkpoint that takes a while
        )
        wait_events(tmp_path, "running", 2, STEP_SECONDS, ended=lambda: job_ended(slurm, job_id))
        running = [event(tmp_path, i, "running") for i in range(2)]
        pids = [int(str(record["pid"])) for record in running if record]
        slurm.run("scancel", job_id)
        gone = wait_gone(pids, 3 * slurm.kill_wait)
        step = assert_stopped_together(tmp_path, 2)
        fields = slurm.wait_job(job_id, {"CANCELLED", "COMPLETED", "FAILED"}, STEP_SECONDS)
    figure(
        f"scancel of a job on node1 and node2: every task stopped at step {step}, saved (1 s) "
        f"and was gone {gone:.2f} s later (KillWait {slurm.kill_wait:g} s); job "
        f"{fields.get('JobState')}"
    )
    assert gone < slurm.kill_wait


def test_a_time_limit_signal_saves_the_keras_job_and_the_requeued_job_ends_as_uninterrupted(
    slurm: Cluster, tmp_path: Path, keras_reference: Path
) -> None:
    # --time=1 --signal=USR1@1: Slurm sends the signal at its first time-limit check (every
    # ~30 s) less than 31 s before the limit, so 29 to 59 s into the job: after the tasks'
    # imports and kdist.initialize (which the figure shows), and at least 30 s before the
    # limit's own SIGTERM. The first run's 48 batches of 1.5 s outlast it; the requeued run
    # resumes at the next batch.
    expected = [keras_report(keras_reference, i, "reference") for i in range(2)]
    with slurm.jobs() as jobs:
        job_id = slurm.sbatch(
            jobs.new(),
            keras_batch_script(tmp_path),
            env=slurm.env(
                **keras_env(tmp_path),
                SLURM_TEST_DIR=str(tmp_path),
                BACKUP_DIR=str(tmp_path / "backup"),
                BACKUP_SAVE_FREQ="epoch",
                KDIST_STOP_SIGNALS="SIGTERM,SIGUSR1",
                FIRST_RUN_STEP_SLEEP="1.5",
            ),
            options=[
                *across(2),
                f"--output={tmp_path}/batch.out",
                "--open-mode=append",
                "--time=1",
                "--signal=USR1@1",
                "--requeue",
            ],
        )
        # The first run's start (once requeued, StartTime is the next run's).
        started = started_at(slurm.wait_job(job_id, {"RUNNING"}, STEP_SECONDS))
        wait_reports(tmp_path, "run0", 2 * STEP_SECONDS)
        first = [keras_report(tmp_path, i, "run0") for i in range(2)]
        slurm.start_now(job_id, STEP_SECONDS)
        fields = slurm.wait_job(job_id, {"COMPLETED", "FAILED"}, 2 * STEP_SECONDS)
        second = [keras_report(tmp_path, i, "run1") for i in range(2)]
    step = assert_resumed_as_uninterrupted(tmp_path, first, second, expected, fields)
    ends, marks = first[0]["batch_ends"], first[0]["marks"]
    assert isinstance(ends, list) and isinstance(marks, dict)
    initialized = float(marks["initialized"]) - started
    figure(
        f"Keras fit with kdist.BackupAndRestore across node1 and node2, --time=1 "
        f"--signal=USR1@1: task 0's kdist.initialize() returned {initialized:.0f} s into the "
        f"job; both saved at batch {step} (its end {ends[step - 1] - started:.0f} s in) and "
        f"stopped; the requeued run resumed at batch {step + 1} and ended with the "
        f"uninterrupted weights"
    )


# --- losing a node (last: it takes node2 away for a while) ---------------------------------


def test_a_lost_node_ends_the_tasks_on_the_other_within_the_window(
    slurm: Cluster, tmp_path: Path
) -> None:
    # node2's link to the bridge goes down: its packets vanish (no FIN, no RST), as a host
    # that loses power. node1's task must name it unreachable and end within the window.
    lost = slurm.nodes[1]
    env = slurm.env(SLURM_TEST_DIR=str(tmp_path), SLURM_TEST_STEPS="1000000")
    with slurm.jobs() as jobs:
        job = jobs.new()
        command = [
            "srun",
            "--immediate=30",
            f"--job-name={job.name}",
            *across(2),
            *task_files(tmp_path),
            sys.executable,
            WORKER,
        ]
        step = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_events(tmp_path, "running", 2, STEP_SECONDS, ended=lambda: step_ended(step))
            pids = [
                int(str(record["pid"]))
                for i in range(2)
                if (record := event(tmp_path, i, "running"))
            ]
            slurm.set_link(lost, up=False)
            try:
                seconds = wait_gone(pids[:1], LOST_HOST_SECONDS + 10)
                # The task cut off on node2 ends too (it lost the coordinator).
                cut_off = seconds + wait_gone(pids[1:], LOST_HOST_SECONDS + 10)
            finally:
                slurm.set_link(lost, up=True)
            stderr = task_output(tmp_path, 0)[1]
        finally:
            if step.poll() is None:
                step.kill()
            step.communicate(timeout=30)
    # The line that names it on node1: process 1, its pid and node2's address.
    named = [
        line
        for line in stderr.splitlines()
        if line.startswith("kdist: process 1 (host ")
        and f"pid {pids[1]}, address {lost.address}" in line
        and ") is unreachable since " in line
    ]
    assert named, stderr[-3000:]
    figure(
        f"{lost.name}'s link down: node1's task ended {seconds:.1f} s later, node2's "
        f"{cut_off:.1f} s (the window is {LOST_HOST_SECONDS} s): {named[0]}"
    )
    assert seconds < LOST_HOST_SECONDS + 5
