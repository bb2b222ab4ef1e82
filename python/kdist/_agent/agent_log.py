"""What a machine's agent says: each note on stderr (one line, one prefix), and, with
--log-dir, the same line with its wall-clock time in `<log dir>/agent.log`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TextIO

from kdist._local_job.output import Output

AGENT_LOG_FILE = "agent.log"


class AgentLog:
    """The agent's notes: to the console through `output`, and to agent.log when given."""

    def __init__(self, output: Output, log_dir: Path | None) -> None:
        self.output = output
        self._file: TextIO | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._file = (log_dir / AGENT_LOG_FILE).open("a", encoding="utf-8")

    def note(self, text: str) -> None:
        """One note: `kdist launch: <text>` on stderr, and in agent.log with its time."""
        self.output.note(text)
        self.record(text)

    def record(self, text: str) -> None:
        """A line for agent.log only (what the core printed itself, say), with its time."""
        if self._file is None:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        fraction = f"{time.time() % 1:.3f}"[1:]
        for line in text.splitlines() or [""]:
            self._file.write(f"{stamp}{fraction} {self.output.name}: {line}\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
