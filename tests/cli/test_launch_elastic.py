"""`kdist launch --nodes MIN:MAX --global-batch B` (issue 44): the batch is checked against
every node count at the start, before this machine joins anything."""

from __future__ import annotations

import subprocess
import sys

from helpers.support import clean_env


def _launch(*args: str) -> subprocess.CompletedProcess[str]:
    # Port 9 on loopback: nothing listens; a refused check never gets as far as joining.
    return subprocess.run(
        [sys.executable, "-m", "kdist", "launch", *args, "--", sys.executable, "-c", "pass"],
        env=clean_env(1),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_global_batch_that_some_node_count_cannot_split_is_refused_naming_it() -> None:
    done = _launch(
        "--nodes", "2:3", "--rendezvous", "127.0.0.1:9", "-n", "2", "--global-batch", "8",
        "--join-timeout", "5",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "refused before joining: --global-batch 8" in done.stderr
    assert "at 3 nodes (6 processes) of --nodes 2:3 with -n 2" in done.stderr
    assert "such as 12" in done.stderr
    assert "rendezvous" not in done.stderr.split("refused before joining")[0]


def test_a_global_batch_every_node_count_splits_goes_on_to_join() -> None:
    done = _launch(
        "--nodes", "2:3", "--rendezvous", "127.0.0.1:9", "-n", "2", "--global-batch", "12",
        "--join-timeout", "1",
    )  # fmt: skip
    assert "--global-batch" not in done.stderr, done.stderr
    assert done.returncode != 2, done.stderr  # it went on, and waited for MIN machines
