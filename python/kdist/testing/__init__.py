"""kdist.testing: test multi-process JAX and Keras code with pytest, on one machine.

`run_job(fn, *args, num_processes=2, devices_per_process=1, timeout=60)` runs `fn`
in every process of a fresh job on this machine (JAX's CPU backend, the coordinator
on loopback, `kdist.initialize()` done) and returns what each process returned; a
failure anywhere ends every process and raises one `JobFailed` in the caller, with
the failing process's traceback. The pytest plugin (loaded by pytest wherever kdist is
installed) runs a test marked `@pytest.mark.kdist_job(num_processes=4)` in every
process of such a job. See docs/testing.md.

`import kdist` does not import this package: `import kdist.testing`. Importing it
imports neither JAX nor kdist's compiled core.

Example:
    >>> import kdist
    >>> from kdist.testing import run_job
    >>> run_job(kdist.get_device_count, num_processes=2, devices_per_process=2)
    [4, 4]
"""

from kdist.testing._failures import JobFailed, JobTimeout, ProcessEnd
from kdist.testing._run_job import PORT_ATTEMPTS, run_job

__all__ = ["PORT_ATTEMPTS", "JobFailed", "JobTimeout", "ProcessEnd", "run_job"]
