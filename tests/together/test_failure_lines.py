"""A failure is named by its error, never by a note that follows it.

Python prints an exception's notes (`add_note()`) after its message, and nearly every
error of a JAX program carries JAX's note "For simplicity, JAX has removed its internal
frames ...". kdist's line in the failing process, every peer's line, `kdist launch`'s
"failed first" line and summary, and `kdist.testing.JobFailed` name the exception's type
and message: checked with JAX's own errors, a note of the program's own, and a chained
exception, in real jobs.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import kdist.testing
from helpers.launched import ROOT
from helpers.support import KDIST_SCRIPT, PROGRAMS, clean_env
from kdist._together import leaving

JAX_ERROR = "TypeError: cannot reshape array of shape (2,) (size 2) into shape 3 (size 3)"
JAX_NOTE = "For simplicity, JAX has removed its internal frames"


def raise_from_jax() -> None:
    import jax
    import jax.numpy as jnp

    jax.jit(lambda x: x.reshape(3))(jnp.ones(2))


def caught(fn: object) -> BaseException:
    try:
        fn()  # type: ignore[operator]
    except BaseException as error:
        return error
    raise AssertionError("it did not raise")


def test_jax_errors_are_named_by_their_message_not_by_jax_note(jax_cpu: object) -> None:
    # jax_cpu: this process's JAX backend starts as every in-process test expects it.
    error = caught(raise_from_jax)
    assert any(JAX_NOTE in note for note in getattr(error, "__notes__", [])), error
    assert leaving.describe(error) == JAX_ERROR


def test_a_note_of_the_programs_own_does_not_name_the_error() -> None:
    error = ValueError("the batch has 3 rows, expected 4")
    error.add_note("see the docs")
    assert leaving.describe(error) == "ValueError: the batch has 3 rows, expected 4"


def test_a_chained_exception_is_named_by_the_one_raised() -> None:
    def chained() -> None:
        try:
            {}["learning_rate"]
        except KeyError as missing:
            raise RuntimeError("the optimizer has no learning rate") from missing

    assert leaving.describe(caught(chained)) == "RuntimeError: the optimizer has no learning rate"


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (KeyError("learning_rate"), "KeyError: 'learning_rate'"),
        (RuntimeError(), "RuntimeError"),
        (ValueError("first line\nsecond line"), "ValueError: first line"),
        (json.JSONDecodeError("Expecting value", "x", 0), "json.decoder.JSONDecodeError: "),
        (kdist.ConfigError("bad"), "kdist.ConfigError: bad"),
        (SyntaxError("invalid syntax", ("f.py", 3, 1, "x y")), "SyntaxError: invalid syntax"),
    ],
)
def test_every_kind_of_exception_is_named_by_type_and_first_line(
    error: BaseException, named: str
) -> None:
    assert leaving.describe(error).startswith(named)


def _fn_raises_from_jax() -> None:
    import jax

    if jax.process_index() == 1:
        raise_from_jax()
    kdist.barrier("process-1-never-comes", timeout=60)


@pytest.mark.multiprocess
def test_job_failed_names_jax_errors_by_their_message() -> None:
    with pytest.raises(kdist.testing.JobFailed) as info:
        kdist.testing.run_job(_fn_raises_from_jax, num_processes=2, timeout=90)
    assert info.value.process_id == 1
    assert info.value.error == JAX_ERROR
    assert JAX_ERROR in str(info.value).splitlines()[0], str(info.value)


LAUNCH = (str(KDIST_SCRIPT), "launch", "-n", "2", "--timeout", "120", "--", sys.executable)


def launch(how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAUNCH, str(PROGRAMS / "raise_in_job.py"), how],
        env=clean_env(1),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def kdist_lines(stderr: str) -> list[str]:
    """kdist's own lines (the processes' and the launcher's), summary rows included."""
    return [
        line
        for line in stderr.splitlines()
        if "kdist:" in line or line.startswith("kdist launch:") or line.lstrip("* ")[:1].isdigit()
    ]


@pytest.mark.multiprocess
@pytest.mark.parametrize(
    ("how", "named"),
    [
        ("jax", JAX_ERROR),
        ("note", "ValueError: the batch has 3 rows, expected 4"),
        ("chained", "RuntimeError: the optimizer has no learning rate"),
    ],
)
def test_every_line_of_a_job_names_the_error(how: str, named: str) -> None:
    result = launch(how)
    assert result.returncode == 1, result.stderr
    lines = kdist_lines(result.stderr)
    text = "\n".join(lines)
    assert "] kdist: process 1 (host " in text, result.stderr
    own = [line for line in lines if "kdist: process 1 (host" in line and "failed:" in line]
    assert own and all(named in line for line in own), result.stderr
    peer = [line for line in lines if line.startswith("[0] kdist: process 1") and "failed" in line]
    assert peer and named in peer[0], result.stderr
    first = [line for line in lines if line.startswith("kdist launch: process 1 failed first")]
    assert first and named in first[0], result.stderr
    rows = [line for line in lines if line.lstrip("* ").startswith(("0 ", "1 "))]
    assert len(rows) == 2 and all(named[:60] in row for row in rows), result.stderr
    assert all(JAX_NOTE not in line and "see the docs" not in line for line in lines), text


@pytest.mark.multiprocess
def test_an_error_before_initialize_is_named_from_its_traceback() -> None:
    """No liveness channel yet, so no record: the launcher reads Python's traceback, and
    takes its exception line, not the note printed after it."""
    result = launch("before")
    assert result.returncode == 1, result.stderr
    assert f"kdist launch: process 1 failed first (exit 1): {JAX_ERROR}" in result.stderr, (
        result.stderr
    )
