"""kdist's pytest plugin: `@pytest.mark.kdist_job(...)` runs a test in every process of a job.

pytest loads it wherever kdist is installed (the `kdist` entry point of the `pytest11`
group; `-p no:kdist` turns it off). It registers the marker and leaves every test
without it alone. A marked test function is not called in the pytest process: it runs
in each process of a fresh job, as `kdist.testing.run_job` runs a function, with the
marker's arguments (`num_processes=2, devices_per_process=1, timeout=60, env=None`).
Its arguments (parametrized values, fixture values) are pickled and given to every
process; a failure is reported once, with the failing process's traceback, and every
process's output is in the test's captured output, each line prefixed with `[id] `.
"""

from __future__ import annotations

import pytest

from kdist.testing._failures import JobFailed
from kdist.testing._run_job import run

MARKER = "kdist_job"
_OPTIONS = {"num_processes": 2, "devices_per_process": 1, "timeout": 60.0, "env": None}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(num_processes=2, devices_per_process=1, timeout=60, env=None): run the "
        "test in every process of a fresh kdist job on this machine (kdist.testing.run_job)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Runs a marked test function in every process of a job (True: it was called)."""
    marker = pyfuncitem.get_closest_marker(MARKER)
    if marker is None:
        return None
    unknown = sorted(set(marker.kwargs) - set(_OPTIONS))
    if marker.args or unknown:
        pytest.fail(
            f"@pytest.mark.{MARKER} takes only the keyword arguments "
            f"{', '.join(_OPTIONS)}; received "
            + ", ".join([*map(repr, marker.args), *(f"{k}=..." for k in unknown)]),
            pytrace=False,
        )
    options = {**_OPTIONS, **marker.kwargs}
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    failure = None
    try:
        run(
            pyfuncitem.obj,
            (),
            arguments,
            num_processes=options["num_processes"],
            devices_per_process=options["devices_per_process"],
            timeout=options["timeout"],
            env=options["env"],
            initialize=True,
        )
    except JobFailed as error:
        failure = str(error)
    except (TypeError, ValueError) as error:  # a wrong option, or what cannot be pickled
        failure = f"@pytest.mark.{MARKER}: {error}"
    if failure is not None:  # outside the except clause: no "during handling" chain
        pytest.fail(failure, pytrace=False)
    return True
