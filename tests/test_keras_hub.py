"""KerasHub's layout maps on kdist's mesh, across two real processes.

KerasHub's LLM backbones ship `get_layout_map(device_mesh, ...)`, which checks
`isinstance(device_mesh, keras.distribution.DeviceMesh)` and returns a Keras LayoutMap.
Here a `kdist.DeviceMesh` goes in, and what comes out goes straight into
`kdist.ModelParallel`: two processes x two CPU devices on loopback (real
jax.distributed, started by kdist.initialize()), a (2, 2) batch x model mesh, a tiny
backbone of each family built from a small config (no weights are downloaded), two
training steps (tests/workers/keras_hub_fit.py). In the same run each process trains the
same model under Keras's own DeviceMesh and ModelParallel: the losses and every
variable's layout and local shard shapes must be Keras's.

keras-hub depends on TensorFlow through tensorflow-text, but importing it and building
backbones needs neither: scripts/test.sh installs it with `--no-deps` and the two light
dependencies its import needs. Where it is not installed, these tests skip, saying so.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from support import NEEDS_KERAS, clean_env, run_cluster, run_python

pytestmark = [
    pytest.mark.multiprocess,
    NEEDS_KERAS,
    pytest.mark.skipif(
        importlib.util.find_spec("keras_hub") is None,
        reason="keras-hub is not installed (scripts/test.sh installs it: pip install --no-deps "
        "keras-hub regex tokenizers)",
    ),
]

# Every KerasHub backbone class that has get_layout_map (keras-hub 0.32). Qwen2Backbone is
# another name of QwenBackbone, checked as such.
FAMILIES = [
    "GemmaBackbone",
    "LlamaBackbone",
    "Llama3Backbone",
    "QwenBackbone",
    "QwenMoeBackbone",
    "Qwen3MoeBackbone",
]
# Seconds for the whole 2-process job: two KerasHub imports and 2 x 6 small models
# compiled on two cores (about 4 minutes on the 2-core machines).
JOB_TIMEOUT = 540


@pytest.fixture(scope="module")
def reports() -> list[dict[str, Any]]:
    finished = run_cluster(
        "keras_hub_fit.py",
        2,
        timeout=JOB_TIMEOUT,
        extra_env={"KERAS_BACKEND": "jax", "KERAS_HOME": "/tmp/kdist-test-keras-home"},
        args=FAMILIES,
    )
    for process in finished:
        assert process.returncode == 0, process.describe()
    return [process.report() for process in finished]


@pytest.mark.parametrize("family", FAMILIES)
def test_kdist_mesh_and_kerashub_layout_map_train_as_keras_does(
    reports: list[dict[str, Any]], family: str
) -> None:
    first, second = (report["families"][family] for report in reports)
    assert first["kdist"]["losses"] == second["kdist"]["losses"]  # one model, two processes
    for report in (first, second):
        ours, theirs = report["kdist"], report["keras"]
        assert len(ours["losses"]) == 2
        assert ours["losses"] == theirs["losses"]
        assert ours["shards"] == theirs["shards"]
    # The layout map did split the model: some kernels over "model", in local pieces.
    split = {
        path: shard for path, shard in first["kdist"]["shards"].items() if "model" in shard["spec"]
    }
    assert any(path.endswith("token_embedding/embeddings") for path in split), sorted(split)
    embedding = next(s for p, s in split.items() if p.endswith("token_embedding/embeddings"))
    assert embedding["spec"] == ["model", "batch"]
    assert embedding["local_shards"] == [[32, 8], [32, 8]]  # (64, 16) over the 2 x 2 mesh


def test_qwen2_backbone_is_qwen_backbone() -> None:
    """Qwen2Backbone is QwenBackbone under another name, so one run covers both."""
    finished = run_python(
        "import keras_hub; m = keras_hub.models; print(m.Qwen2Backbone is m.QwenBackbone)",
        env=clean_env(devices=1, KERAS_BACKEND="jax"),
        timeout=120,
    )
    assert finished.returncode == 0, finished.describe()
    assert finished.stdout.split() == ["True"]
