"""Data parallelism for real (torch.distributed, gloo, 2 CPU processes): the oracle is one process on the whole
batch, and the measured all-reduce sits beside the modelled one."""

from __future__ import annotations

import pytest

from accelkit import zoo
from accelkit.errors import ArgumentError
from accelkit.runtime.ddp import data_parallel, modelled_allreduce_s


@pytest.mark.timeout(120)
def test_two_processes_all_reduce_to_the_single_process_gradient() -> None:
    run = data_parallel("ffn_logreg", world_size=2, steps=2, batch_size=16, target="h100")
    params = sum(p.numel() for p in zoo.get("ffn_logreg").model.parameters() if p.requires_grad)
    assert run.gradient_bytes == 4 * params
    # the oracle: mean of the two shards' gradients == the whole batch's gradient, and so the same weights
    assert run.max_grad_diff < 1e-6
    assert run.max_weight_diff < 1e-6
    assert len(run.allreduce_s) == 2 and all(t > 0 for t in run.allreduce_s)
    assert len(run.losses) == 2 and all(loss > 0 for loss in run.losses)
    assert run.modelled_allreduce_s == pytest.approx(modelled_allreduce_s(run.gradient_bytes, 2, "h100"))
    assert run.modelled_allreduce_s > 0 and run.link_Bps
    text = run.summary()
    assert "MEASURED on this host" in text and "MODELLED on 2 x h100" in text


def test_the_modelled_all_reduce_grows_with_bytes_and_differs_by_interconnect() -> None:
    small, large = (modelled_allreduce_s(n, 4, "h100") for n in (1e6, 1e8))
    assert 0 < small < large
    assert modelled_allreduce_s(1e8, 4, "sn40l") != large  # another chip, another link


def test_bad_arguments_are_accelkit_errors() -> None:
    with pytest.raises(ArgumentError, match="world_size"):
        data_parallel("ffn_logreg", world_size=1)
    with pytest.raises(ArgumentError, match="zoo model"):
        data_parallel("resnet9000")
    with pytest.raises(ArgumentError, match="does not split evenly"):
        data_parallel("ffn_logreg", world_size=2, batch_size=15)
