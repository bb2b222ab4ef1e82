"""The processes' output, copied line by line to one place with an `[id] ` prefix."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import BinaryIO, Protocol

_READ_CHUNK = 65536


class ByteSink(Protocol):
    """Where lines go: a binary stream (sys.stdout.buffer) or anything with its two methods."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class Output:
    """Two sinks (for stdout and stderr lines), written one whole line at a time."""

    def __init__(self, out: ByteSink, err: ByteSink, name: str = "kdist launch") -> None:
        self.out, self.err = out, err
        self.name = name  # who writes the notes
        self._lock = threading.Lock()

    def write(self, stream: ByteSink, data: bytes) -> None:
        with self._lock:
            try:
                stream.write(data)
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: keep draining the children
                pass

    def note(self, message: str) -> None:
        self.write(self.err, f"{self.name}: {message}\n".encode())


# Gloo (JAX's CPU collectives) prints one of these to stdout for every device whenever it
# connects a group, two threads at once at times (so several can share a line). They say
# nothing when the count is the expected one; a line where it is not is kept.
_GLOO_CONNECTED = re.compile(
    rb"\[Gloo\] Rank \d+ is connected to (\d+) peer ranks\. "
    rb"Expected number of connected peer ranks is : (\d+)"
)


def is_gloo_connected_note(line: bytes) -> bool:
    r"""Whether `line` holds nothing but Gloo's "connected as expected" notes.

    Example:
        >>> from kdist._local_job.output import is_gloo_connected_note
        >>> note = b"[Gloo] Rank 1 is connected to 3 peer ranks. "
        >>> is_gloo_connected_note(note + b"Expected number of connected peer ranks is : 3\n")
        True
        >>> is_gloo_connected_note(note + b"Expected number of connected peer ranks is : 4\n")
        False
    """
    rest = line.strip()
    if not rest.startswith(b"[Gloo]"):
        return False
    for match in _GLOO_CONNECTED.finditer(rest):
        if match.group(1) != match.group(2):
            return False
        rest = rest.replace(match.group(0), b"", 1)
    return not rest.strip()


def copy_lines(
    source: BinaryIO,
    output: Output,
    stream: ByteSink | None,
    prefix: bytes,
    on_line: Callable[[bytes], None] | None = None,
    *,
    drop: Callable[[bytes], bool] | None = None,
    log: ByteSink | None = None,
) -> None:
    """Copies `source` to `stream` until EOF, each line prefixed with `prefix`, and to
    `log` as it came; whole lines for which `drop` says True are left out; `on_line`
    sees every other line (its first chunk, when a line is longer than the read size).
    A `stream` of None: the lines go only to `log` and `on_line`."""
    at_line_start = True
    try:
        while True:
            chunk = source.readline(_READ_CHUNK)
            if not chunk:
                break
            if drop is not None and at_line_start and chunk.endswith(b"\n") and drop(chunk):
                continue
            if on_line is not None and at_line_start:
                on_line(chunk)
            if stream is not None:
                output.write(stream, (prefix if at_line_start else b"") + chunk)
            if log is not None:
                output.write(log, chunk)
            at_line_start = chunk.endswith(b"\n")
        if not at_line_start:
            if stream is not None:
                output.write(stream, b"\n")
            if log is not None:
                output.write(log, b"\n")
    finally:
        source.close()


# How long a table's last cell (an error line) may be before it is cut.
LAST_CELL_CHARACTERS = 160


def shortened(text: str, most: int = LAST_CELL_CHARACTERS) -> str:
    """`text`, cut to `most` characters with "..." when longer."""
    return text if len(text) <= most else text[: most - 3] + "..."


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as lines of left-aligned columns, two spaces apart; the last column is not
    padded (it holds long lines) and no line ends in spaces."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        (
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[-1]
        ).rstrip()
        for row in rows
    ]
