"""A sibling module of warm_probe.py (imported through sys.path[0])."""

WORD = "sibling"


def fail(message: str) -> None:
    raise ValueError(message)
