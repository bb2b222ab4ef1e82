"""`kdist launch --nodes MIN:MAX --global-batch B`: a constant global batch must split evenly
over the processes at every size the job can take (docs/resume.md, "Resuming on another
shape"), checked once at the start, before this machine joins."""

from __future__ import annotations

import math


def global_batch_problem(
    batch: int, min_nodes: int, max_nodes: int, processes_per_node: int
) -> str | None:
    """Why `batch` cannot be split evenly at some node count MIN..MAX, else None.

    Example:
        >>> global_batch_problem(12, 2, 3, 2) is None
        True
        >>> global_batch_problem(8, 2, 3, 2).endswith("(4, 6), such as 12")
        True
    """
    sizes = range(min_nodes, max_nodes + 1)
    bad = [k for k in sizes if batch % (k * processes_per_node) != 0]
    if not bad:
        return None
    counts = [k * processes_per_node for k in sizes]
    where = ", ".join(f"{k} nodes ({k * processes_per_node} processes)" for k in bad)
    lcm = math.lcm(*counts)
    return (
        f"--global-batch {batch} does not split evenly over the processes at {where} of "
        f"--nodes {min_nodes}:{max_nodes} with -n {processes_per_node}: expected a multiple of "
        f"every process count the job can take ({', '.join(map(str, counts))}), such as {lcm}"
    )
