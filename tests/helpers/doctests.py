"""The one runner of docstring examples: in a fresh interpreter (an example may start JAX,
Keras or a job), with the doctest options the package's examples are written for."""

from __future__ import annotations

from collections.abc import Mapping

from helpers.support import Finished, run_python

# Python that defines `objects()`: (object, name) pairs whose examples run, then this.
_RUNNER = """
import doctest, sys
out = sys.stdout.write  # bound now: a runner swaps sys.stdout while an example runs
finder = doctest.DocTestFinder()
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
empty = []
for obj, name, module in objects():
    tests = [t for t in finder.find(obj, name, module=module, globs=None if module else {})
             if t.examples]
    if not tests:
        empty.append(name)
    for test in tests:
        runner.run(test, out=out)
failed, attempted = runner.summarize(verbose=False)
print("EXAMPLES", failed, attempted, ",".join(empty))
"""


def run_examples(
    objects: str, *, env: Mapping[str, str], timeout: float
) -> tuple[int, int, list[str], Finished]:
    """Runs the examples of every (object, name, module) that `objects` (Python source
    defining a function `objects()`) yields; module is the object's module (or False: a
    public name whose methods live in other wings). Returns (failed, attempted, the names
    without any example, the interpreter's end)."""
    result = run_python(objects + _RUNNER, env=env, timeout=timeout)
    lines = [text for text in result.stdout.splitlines() if text.startswith("EXAMPLES ")]
    assert lines, result.describe()
    _, failed, attempted, empty = [*lines[-1].split(" "), ""][:4]
    return int(failed), int(attempted), [n for n in empty.split(",") if n], result
