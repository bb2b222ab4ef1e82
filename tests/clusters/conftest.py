"""The `slurm` fixture of the real-Slurm tests: scripts/slurm.sh's cluster with the module's
NODES nodes (1 when the module sets none), started for the module when it is not up and
stopped after; the module's tests skip, saying why, where no cluster can start."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from helpers import slurm_cluster
from helpers.slurm_cluster import Cluster


@pytest.fixture(scope="module")
def slurm(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    nodes = getattr(request.module, "NODES", 1)
    try:
        with slurm_cluster.cluster(nodes=nodes) as cluster:
            yield cluster
    except slurm_cluster.Unavailable as unavailable:
        pytest.skip(str(unavailable))
