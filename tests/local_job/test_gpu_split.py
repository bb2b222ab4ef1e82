"""kdist._local_job.gpu_split: which GPUs each process of `kdist launch` gets (the decision
alone; tests/clusters/test_platforms.py runs `kdist launch` on a made /dev)."""

from __future__ import annotations

import pytest

from kdist._local_job.gpu_split import Gpus, GpuSplitError, job_gpus, split_gpus


def test_device_nodes_give_ordinals() -> None:
    gpus = job_gpus({}, ["nvidia0", "nvidia1", "nvidia2", "nvidia3"])
    assert gpus == Gpus(("0", "1", "2", "3"), "/dev/nvidia0-3")
    assert split_gpus(gpus, 2) == ["0,1", "2,3"]
    assert split_gpus(gpus, 1) == ["0,1,2,3"]


def test_the_users_list_wins_and_is_split_the_same_way() -> None:
    gpus = job_gpus({"CUDA_VISIBLE_DEVICES": "5, 7,1,3"}, ["nvidia0"])
    assert gpus is not None and gpus.source == "CUDA_VISIBLE_DEVICES"
    assert split_gpus(gpus, 2) == ["5,7", "1,3"]


def test_no_gpus_or_a_cpu_only_job_leaves_them_alone() -> None:
    assert job_gpus({}, []) is None
    assert job_gpus({"CUDA_VISIBLE_DEVICES": ""}, ["nvidia0"]) is None
    assert job_gpus({"JAX_PLATFORMS": "cpu"}, ["nvidia0"]) is None
    assert job_gpus({"JAX_PLATFORMS": "cuda,cpu"}, ["nvidia0"]) is not None


def test_a_count_that_does_not_divide_is_refused_naming_both() -> None:
    gpus = Gpus(("0", "1", "2", "3"), "/dev/nvidia0-3")
    with pytest.raises(
        GpuSplitError, match=r"-n 3 processes cannot share this machine's 4 GPUs .*1, 2, 4"
    ):
        split_gpus(gpus, 3)
