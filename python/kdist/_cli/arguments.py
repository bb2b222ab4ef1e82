"""The value types of the `kdist` command line's options (argparse's `type=`).

A port and a duration are parsed by the compiled core, which owns those rules; it is
imported when such an option is parsed, not when the parser is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


class ProcessIds:
    """A set of process ids from text: "1,3", "2-5", "1-" (1 and every id after it),
    "all".

    Example:
        >>> from kdist._cli.arguments import ProcessIds
        >>> ids = ProcessIds.parse("0,4-5,9-")
        >>> [i for i in range(12) if i in ids]
        [0, 4, 5, 9, 10, 11]
    """

    def __init__(self, ranges: list[tuple[int, int | None]]) -> None:
        self.ranges = ranges  # (first, last or None: no end), inclusive

    def __contains__(self, process_id: object) -> bool:
        if not isinstance(process_id, int):
            return False
        return any(
            first <= process_id and (last is None or process_id <= last)
            for first, last in self.ranges
        )

    @classmethod
    def parse(cls, text: str) -> ProcessIds:
        if text.strip() == "all":
            return cls([(0, None)])
        ranges: list[tuple[int, int | None]] = []
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            try:
                low = int(first)
                high = (int(last) if last else None) if dash else low
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected process ids such as 1,3 or 2-5 or 1- (1 and every id "
                    f"after it) or all, got {text!r}"
                ) from None
            if low < 0 or (high is not None and high < low):
                raise argparse.ArgumentTypeError(
                    f"expected ids >= 0 and ranges low-high with low <= high, got {part!r}"
                )
            ranges.append((low, high))
        return cls(ranges)


def port(text: str) -> int:
    """argparse's `type=` for a port: the core parses it (1..65535)."""
    from kdist import _core
    from kdist._errors import ConfigError

    try:
        return _core.parse_port(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(f"{text!r} {error}") from None


def seconds(text: str) -> float:
    """argparse's `type=` for a duration: the core parses it (positive seconds, at most the
    longest timeout it accepts)."""
    from kdist import _core
    from kdist._errors import ConfigError

    try:
        return _core.parse_timeout_seconds(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(f"{error}, got {text!r}") from None


def module_names(text: str) -> list[str]:
    """`--preload MODULES`: comma-separated dotted module names.

    Example:
        >>> module_names("orbax.checkpoint, my_model")
        ['orbax.checkpoint', 'my_model']
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    bad = [n for n in names if not all(part.isidentifier() for part in n.split("."))]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated module names (e.g. orbax.checkpoint,my_model), got {text!r}"
        )
    return names


def node_range(text: str) -> tuple[int, int]:
    """`--nodes MIN[:MAX]`: (MIN, MAX), 1 <= MIN <= MAX; MAX defaults to MIN.

    Example:
        >>> node_range("2:4"), node_range("3")
        ((2, 4), (3, 3))
    """
    low, _, high = text.partition(":")
    try:
        min_nodes = int(low)
        max_nodes = int(high) if high else min_nodes
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN or MIN:MAX, positive integers; received {text!r}"
        ) from None
    if min_nodes < 1 or max_nodes < min_nodes:
        raise argparse.ArgumentTypeError(f"expected 1 <= MIN <= MAX; received {text!r}")
    return min_nodes, max_nodes


def set_token_file(request: Any, path: Path | None, parser: argparse.ArgumentParser) -> None:
    """--token-file's token and its source onto a NodeRequest (nothing when it is None); a
    refused file ends the command (parser.error, naming why)."""
    if path is None:
        return
    try:
        request.token = token_file(path)
    except ValueError as error:
        parser.error(str(error))
    request.token_source = f"--token-file {path}"


def token_file(path: Path) -> str:
    """The job's token from `path`, refused (ValueError) when others can read it or it is
    empty; its trailing newline dropped. The token is never printed."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ValueError(f"--token-file {path}: cannot read it ({error.strerror})") from None
    if mode & 0o077:
        raise ValueError(
            f"--token-file {path}: group or others can read it (mode {mode & 0o777:o}); "
            f"expected 600: chmod 600 {path}"
        )
    if not text:
        raise ValueError(f"--token-file {path}: it is empty; expected the job's token")
    return text
