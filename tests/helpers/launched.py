"""`kdist launch` run in the background by a test, its output collected line by line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from helpers.support import alive

ROOT = Path(__file__).resolve().parents[2]


class Launcher:
    """A `kdist launch` started in the background; its output collected line by line."""

    def __init__(self, args: Sequence[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kdist", "launch", *args],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._threads = [
            threading.Thread(
                target=self._collect, args=(self.proc.stdout, self.stdout), daemon=True
            ),
            threading.Thread(
                target=self._collect, args=(self.proc.stderr, self.stderr), daemon=True
            ),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _collect(stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line.rstrip("\n"))

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, self.describe()
            assert self.proc.poll() is None or predicate(), self.describe()
            time.sleep(0.02)

    def wait(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(
                "kdist launch did not finish in time\n" + self.describe()
            ) from None
        self.close()
        return code

    def close(self) -> None:
        for thread in self._threads:
            thread.join(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def started_pids(self) -> list[int]:
        """The pids the launcher reports it started."""
        for line in self.stderr:
            if m := re.search(r"started \d+ process(?:es)? \(pids ([\d, ]+)\)", line):
                return [int(p) for p in m.group(1).split(", ")]
        return []

    def every_started_pid(self) -> list[int]:
        """The pids the launcher reports it started, on every attempt."""
        pids = []
        for line in self.stderr:
            if m := re.search(r"started \d+ process(?:es)? \(pids ([\d, ]+)\)", line):
                pids += [int(p) for p in m.group(1).split(", ")]
        return pids

    def reports(self) -> dict[int, dict[str, object]]:
        """Each child's JSON report, by process id (the prefix is checked)."""
        found = {}
        for line in self.stdout:
            m = re.fullmatch(r"\[(\d+)\] (\{.*\})", line)
            if m:
                report = json.loads(m.group(2))
                assert report["process_id"] == int(m.group(1))
                found[int(m.group(1))] = report
        return found

    def describe(self) -> str:
        return "--- stdout\n" + "\n".join(self.stdout) + "\n--- stderr\n" + "\n".join(self.stderr)

    def end(self, more_pids: Sequence[int] = ()) -> None:
        """Kills the launcher if it still runs, then every process it started (on every
        attempt) and `more_pids` that are still alive, by pid."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.close()
        for pid in [*self.every_started_pid(), *more_pids]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def attempt_rows(launcher: Launcher) -> list[list[str]]:
    """The rows of the launcher's last table (one per attempt), split into columns
    (attempt, port, status, after, ended... and the first failure as the rest)."""
    at = launcher.stderr.index("kdist launch: attempts:")
    rows = []
    for line in launcher.stderr[at + 2 :]:
        if not re.match(r"  \d+ ", line):
            break
        rows.append(line.split())
    return rows
