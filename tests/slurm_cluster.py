"""A real single-node Slurm cluster for tests/test_slurm.py: scripts/slurm.sh's.

`cluster()` uses the cluster scripts/slurm.sh started (scripts/test.sh starts it around
the Slurm tests), or starts one itself when Slurm is installed (and stops it after), or
says why there is none (`Unavailable`). Every client command runs with SLURM_CONF set:
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

from support import clean_env

REPOSITORY = Path(__file__).resolve().parents[1]
SCRIPT = REPOSITORY / "scripts" / "slurm.sh"
DIRECTORY = Path(os.environ.get("KDIST_SLURM_DIR", REPOSITORY / "build" / "slurm"))
COMMAND_SECONDS = 30  # any one Slurm client command


class Unavailable(Exception):
    """No cluster: the message says why."""


def _script(action: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), action],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KDIST_SLURM_DIR": str(DIRECTORY), **env},
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
class Cluster:
    """The running cluster: its configuration file and its KillWait."""

    conf: str
    kill_wait: float

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


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """The cluster of scripts/slurm.sh, started here when it is not up (and then stopped
    here); raises Unavailable, saying why, where there is none."""
    if shutil.which("bash") is None:
        raise Unavailable("bash is missing")
    status = _script("status")
    started = False
    if status.returncode != 0:
        if not (shutil.which("slurmctld") and shutil.which("srun")):
            raise Unavailable(
                "Slurm is not installed (bash scripts/slurm.sh start installs slurm-wlm and "
                "munge, as root, and starts a single-node cluster on loopback)"
            )
        status = _script("start", KDIST_SLURM_NO_INSTALL="1")
        if status.returncode != 0:
            reason = (
                (DIRECTORY / "unavailable").read_text().strip()
                if (DIRECTORY / "unavailable").exists()
                else status.stderr.strip()
            )
            raise Unavailable(f"the Slurm test cluster cannot start: {reason}")
        started = True
    variables = _variables(status.stdout)
    try:
        yield Cluster(variables["SLURM_CONF"], float(variables["KDIST_SLURM_KILL_WAIT"]))
    finally:
        if started:
            _script("stop")
