"""A real Slurm cluster for the Slurm tests: scripts/slurm.sh's, of one node on loopback
(tests/clusters/test_slurm.py) or of several, each node a network namespace of its own
(tests/clusters/test_slurm_multinode.py).

`cluster(nodes)` uses the cluster scripts/slurm.sh started (scripts/test.sh starts both
around the Slurm tests), or starts one itself when Slurm is installed (and stops it after,
by pid, with the namespaces, bridge and /etc/hosts lines it made), or says why there is
none (`Unavailable`). Every client command runs with SLURM_CONF set:
a Slurm client without a configuration looks its controller up in DNS (SRV records),
which would send a query off the machine.

`Cluster.jobs()` tracks every job a test submits, by a job name of its own, and cancels
whatever is left of them when the block ends; every wait on Slurm has a deadline.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from helpers import netns
from helpers.support import clean_env

REPOSITORY = Path(__file__).resolve().parents[2]
SCRIPT = REPOSITORY / "scripts" / "slurm.sh"
DIRECTORY = Path(os.environ.get("KDIST_SLURM_DIR", REPOSITORY / "build" / "slurm"))
# The multi-node cluster's (scripts/slurm.sh's default for --nodes 2 or more).
MULTINODE_DIRECTORY = Path(
    os.environ.get("KDIST_SLURM_MULTINODE_DIR", REPOSITORY / "build" / "slurm-multinode")
)
COMMAND_SECONDS = 30  # any one Slurm client command


class Unavailable(Exception):
    """No cluster: the message says why."""


def _script(
    action: str, directory: Path, nodes: int, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), action, "--nodes", str(nodes)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "KDIST_SLURM_DIR": str(directory), **env},
    )


def _variables(text: str) -> dict[str, str]:
    """The `export NAME=value` lines scripts/slurm.sh prints."""
    out = {}
    for line in text.splitlines():
        if line.startswith("export ") and "=" in line:
            name, _, value = line[len("export ") :].partition("=")
            out[name] = value
    return out


@dataclass
class Job:
    """One job a test submitted: its name (unique), and its id once known."""

    name: str
    job_id: str | None = None


@dataclass
class Jobs:
    """The jobs of one test; whatever is left of them is cancelled at the end."""

    cluster: Cluster
    submitted: list[Job] = field(default_factory=list)

    def new(self) -> Job:
        job = Job(f"kdist-test-{uuid.uuid4().hex[:10]}")
        self.submitted.append(job)
        return job

    def cancel_all(self) -> None:
        for job in self.submitted:
            # SIGKILL first, so that nothing waits for KillWait; then the job itself.
            self.cluster.run(
                "scancel", "--full", "--signal=KILL", f"--name={job.name}", check=False
            )
            self.cluster.run("scancel", f"--name={job.name}", check=False)
        deadline = time.monotonic() + COMMAND_SECONDS
        names = {job.name for job in self.submitted}
        while time.monotonic() < deadline:
            listed = self.cluster.run("squeue", "-h", "-o", "%j", check=False).stdout.split()
            if not names & set(listed):
                return
            time.sleep(0.2)


@dataclass
class Node:
    """One node: its name, its address, and (several nodes) its namespace and the root
    namespace's end of its link to the bridge."""

    name: str
    address: str
    namespace: str | None = None
    link: str | None = None


@dataclass
class Cluster:
    """The running cluster: its configuration file, its KillWait and its nodes."""

    conf: str
    kill_wait: float
    nodes: list[Node] = field(default_factory=list)

    def set_link(self, node: Node, up: bool) -> None:
        """Takes `node`'s link to the bridge down (the node vanishes: no FIN, no RST) or up."""
        assert node.link is not None, f"{node.name} has no link of its own (a one-node cluster)"
        subprocess.run(
            ["ip", "link", "set", node.link, "up" if up else "down"],
            check=True,
            capture_output=True,
            timeout=COMMAND_SECONDS,
        )

    def env(self, devices: int = 2, **extra: str) -> dict[str, str]:
        """A job's environment: clean_env() without any SLURM_* variable, with SLURM_CONF."""
        env = {k: v for k, v in clean_env(devices).items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = self.conf
        env.update(extra)
        return env

    def run(
        self, *args: str, check: bool = True, timeout: float = COMMAND_SECONDS
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm client command (scontrol, squeue, scancel, sbatch)."""
        result = subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "SLURM_CONF": self.conf},
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(args)} -> {result.returncode}: {result.stderr}")
        return result

    @contextlib.contextmanager
    def jobs(self) -> Iterator[Jobs]:
        jobs = Jobs(self)
        try:
            yield jobs
        finally:
            jobs.cancel_all()

    def srun(
        self,
        job: Job,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        options: Sequence[str] = (),
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        """`srun --immediate` (a step that cannot start at once fails instead of waiting)."""
        command = ["srun", "--immediate=30", f"--job-name={job.name}", *options, *args]
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as expired:
            raise AssertionError(f"{' '.join(command)} ran past {timeout} s") from expired

    def sbatch(
        self, job: Job, script: Path, *, env: Mapping[str, str], options: Sequence[str] = ()
    ) -> str:
        """Submits `script`; returns the job id."""
        result = subprocess.run(
            ["sbatch", "--parsable", f"--job-name={job.name}", *options, str(script)],
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        job.job_id = result.stdout.strip().split(";")[0]
        return job.job_id

    def job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job`'s fields (JobState, Reason, Restarts, ExitCode, ...); {} when
        Slurm no longer knows the job."""
        result = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        fields = {}
        for word in result.stdout.split():
            name, sep, value = word.partition("=")
            if sep:
                fields.setdefault(name, value)
        return fields

    def wait_job(self, job_id: str, states: set[str], timeout: float) -> dict[str, str]:
        """Until the job's state is one of `states`; its fields then."""
        deadline = time.monotonic() + timeout
        while True:
            fields = self.job(job_id)
            if fields.get("JobState") in states:
                return fields
            assert time.monotonic() < deadline, (
                f"job {job_id} not {states} after {timeout} s: {fields}"
            )
            time.sleep(0.1)

    def start_now(self, job_id: str, timeout: float) -> None:
        """Lets a requeued job start again soon. Slurm holds a requeued batch job for
        about two minutes (its BeginTime); the tests do not wait that long, but they wait
        2 s: slurmd revokes the credential of the job's previous run, and refuses a run
        started in the same second ("Job credential revoked": the job then FAILs)."""
        fields = self.wait_job(job_id, {"PENDING"}, timeout)
        assert fields.get("Reason") in ("BeginTime", "None", "Priority", "Resources"), fields
        time.sleep(2)
        self.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")


def _nodes(variables: Mapping[str, str]) -> list[Node]:
    """The nodes scripts/slurm.sh names (KDIST_SLURM_HOSTS, KDIST_SLURM_NAMESPACES, ...)."""
    hosts = [item.partition("=") for item in variables["KDIST_SLURM_HOSTS"].split(",")]
    namespaces = variables.get("KDIST_SLURM_NAMESPACES", "").split(",")
    links = variables.get("KDIST_SLURM_LINKS", "").split(",")
    return [
        Node(name, address, namespaces[i] or None, links[i] or None)
        for i, (name, _, address) in enumerate(hosts)
    ]


@contextlib.contextmanager
def cluster(nodes: int = 1) -> Iterator[Cluster]:
    """The cluster of scripts/slurm.sh with `nodes` nodes, started here when it is not up
    (and then stopped here); raises Unavailable, saying why, where there is none."""
    directory = DIRECTORY if nodes == 1 else MULTINODE_DIRECTORY
    if shutil.which("bash") is None:
        raise Unavailable("bash is missing")
    status = _script("status", directory, nodes)
    started = False
    if status.returncode != 0:
        if not (shutil.which("slurmctld") and shutil.which("srun")):
            raise Unavailable(
                "Slurm is not installed (bash scripts/slurm.sh start installs slurm-wlm and "
                "munge, as root, and starts a single-node cluster on loopback; --nodes 2, "
                "a cluster of two nodes in network namespaces)"
            )
        if nodes > 1:
            reason = netns.unavailable_reason() or (
                None if shutil.which("nsenter") else "a multi-node cluster needs nsenter"
            )
            if reason is not None:
                raise Unavailable(f"no multi-node Slurm cluster: {reason}")
        status = _script("start", directory, nodes, KDIST_SLURM_NO_INSTALL="1")
        if status.returncode != 0:
            reason = (
                (directory / "unavailable").read_text().strip()
                if (directory / "unavailable").exists()
                else status.stderr.strip()
            )
            raise Unavailable(f"the Slurm test cluster cannot start: {reason}")
        started = True
    variables = _variables(status.stdout)
    try:
        yield Cluster(
            variables["SLURM_CONF"],
            float(variables["KDIST_SLURM_KILL_WAIT"]),
            _nodes(variables),
        )
    finally:
        if started:
            _script("stop", directory, nodes)
