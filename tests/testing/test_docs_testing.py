"""docs/testing.md shows examples/test_kdist_testing.py, and those examples pass.

Every ```python block of the page is a piece of the example file, as it is written there,
and every function of the file is on the page; the file itself runs under pytest (its
jobs are real: 4 processes x 2 CPU devices, and a Keras fit on 2 processes).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import NEEDS_KERAS, clean_env

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
EXAMPLE = ROOT / "examples" / "test_kdist_testing.py"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


def test_every_python_block_of_the_page_is_in_the_example_file() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 4
    source = EXAMPLE.read_text()
    for block in blocks[1:]:  # the first is the import line, at the top of the file in part
        assert block in source, f"not in {EXAMPLE.name}:\n{block}"
    assert "from kdist.testing import run_job" in source


def test_every_function_of_the_example_file_is_on_the_page() -> None:
    shown = "\n".join(python_blocks())
    tree = ast.parse(EXAMPLE.read_text())
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert len(functions) == 5
    for name in functions:
        assert f"def {name}(" in shown, name


def test_the_readme_links_to_the_page() -> None:
    assert "(docs/testing.md)" in (ROOT / "README.md").read_text()


@pytest.mark.multiprocess
@NEEDS_KERAS
def test_the_examples_pass_as_written(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(EXAMPLE)],
        cwd=ROOT,
        env=clean_env(KERAS_HOME=str(tmp_path / "keras_home")),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1].startswith("3 passed"), result.stdout[-2000:]
