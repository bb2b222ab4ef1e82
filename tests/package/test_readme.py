"""The README's commands work as written, in a fresh shell after the two set-up commands.

Every line of a ```bash block in README.md that starts with `.venv/bin/` is run from the
repository's root with a clean environment (no kdist, Keras or JAX settings), the virtual
environment being the one running these tests. A command whose comment says "exit N" must
exit with N; every other must exit with 0. A line with shell syntax (`&`, `;`, `|`, `$`) runs
in bash, as a user pasting it would run it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import clean_env

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def readme_commands() -> list[tuple[str, int]]:
    """(command, expected exit status) for each `.venv/bin/` line of a bash block."""
    commands: list[tuple[str, int]] = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            command, _, comment = line.partition("#")
            if not command.strip().startswith(".venv/bin/"):
                continue
            status = re.search(r"\bexit (\d+)", comment)
            commands.append((command.strip(), int(status.group(1)) if status else 0))
    return commands


def test_the_readme_names_commands_that_run_from_the_virtual_environment() -> None:
    commands = [command for command, _ in readme_commands()]
    assert any(" launch " in c for c in commands) and any(" doctor" in c for c in commands)
    # Bare `kdist` or `python` lines would fail in a fresh shell (not on the PATH).
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            assert not re.match(r"\s*(kdist|python)\s", line), line


@pytest.mark.multiprocess
@pytest.mark.parametrize(("command", "status"), readme_commands())
def test_a_readme_command_runs_as_written(command: str, status: int) -> None:
    venv_bin = str(Path(sys.executable).parent) + "/"
    if re.search(r"[&;|$]", command):
        args = ["bash", "-c", re.sub(r"(?<![\w./])\.venv/bin/", venv_bin, command)]
    else:
        args = [part.replace(".venv/bin/", venv_bin, 1) for part in shlex.split(command)]
    result = subprocess.run(
        args, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == status, (
        f"{command} -> {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    )
