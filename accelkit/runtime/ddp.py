"""Data parallelism for real: a zoo model trained by a few CPU processes over ``torch.distributed`` (gloo).

    from accelkit.runtime.ddp import data_parallel
    run = data_parallel("braggnn", world_size=2, steps=3, target="h100")
    print(run.summary())   # the oracle (all-reduced gradients == one process on the whole batch), the
                           # MEASURED all-reduce per step on this host beside the MODELLED one on 2 x h100

Each of ``world_size`` processes holds the same model (same seed, same weights) and takes its slice of every
global batch (``batch_size / world_size`` samples); after its backward, one ``all_reduce`` sums the gradients
of all processes in a single flat buffer (one bucket, as DistributedDataParallel does for a small model) and
each divides by ``world_size``: every process then holds the mean gradient over the whole batch, the same one
a single process computes on the whole batch (:attr:`DataParallelRun.max_grad_diff` says how close, and the
oracle test asserts it), and applies the same SGD step. The model runs in eval mode so that dropout draws
nothing and batch norm uses its running statistics: the shards' gradients then add up exactly (in train mode
batch norm's statistics would be per shard, as in DistributedDataParallel without SyncBatchNorm).

The processes start with ``torch.multiprocessing`` (fork where the platform has it, so a notebook's session
is inherited; spawn elsewhere), or under ``torchrun``::

    torchrun --nproc-per-node 2 -m accelkit.runtime.ddp --model braggnn --steps 3 --target h100

The all-reduce's time is measured on this host (loopback TCP between processes on the same CPU: no
accelerator link is involved); beside it is accelkit's modelled all-reduce of the same bytes over
``world_size`` chips of ``target`` (its family's collective over the chip's published links).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from accelkit import hardware
from accelkit.boundary import got, whole
from accelkit.errors import AccelkitError, ArgumentError
from accelkit.families import model_for, rates


class DataParallelError(AccelkitError, RuntimeError):
    """A data-parallel run that could not complete: a process failed or the group did not form in time."""


@dataclass(frozen=True)
class DataParallelRun:
    """What a data-parallel run on this host did and measured, and the modelled all-reduce beside it."""

    model: str
    world_size: int
    steps: int
    batch_size: int  # the global batch; each process takes batch_size / world_size samples
    gradient_bytes: int  # bytes every process all-reduces per step (fp32 gradients of every parameter)
    max_grad_diff: float  # the oracle: |mean all-reduced gradient - one process on the whole batch|, at step 1
    max_weight_diff: float  # after every step: rank 0's weights against the single process's
    losses: tuple[float, ...]  # the global batch's mean loss per step (the mean of the shards' losses)
    allreduce_s: tuple[float, ...]  # MEASURED per step on this host: the slowest process's all_reduce call
    target: str
    modelled_allreduce_s: float  # MODELLED: the same bytes all-reduced over world_size chips of target
    link_Bps: float | None  # the chip's links as the catalog gives them (total, both directions)
    link_source: str

    @property
    def measured_allreduce_s(self) -> float:
        """The median measured all-reduce per step (the first step included: it is no warm-up)."""
        return statistics.median(self.allreduce_s)

    def summary(self) -> str:
        link = (f"{self.link_Bps / 1e9:,.0f} GB/s links ({self.link_source})" if self.link_Bps else "links: "
                + (self.link_source or "no figure"))
        return "\n".join([
            f"{self.model}: {self.world_size} processes (gloo), {self.steps} steps, global batch {self.batch_size} "
            f"({self.batch_size // self.world_size} per process)",
            f"  oracle: all-reduced gradients vs one process on the whole batch, max |diff| {self.max_grad_diff:.2e}; "
            f"weights after {self.steps} steps {self.max_weight_diff:.2e}",
            f"  all-reduce of {self.gradient_bytes / 1e6:,.3f} MB per step:",
            f"    MEASURED on this host (loopback, {self.world_size} CPU processes): "
            f"{self.measured_allreduce_s * 1e3:,.3f} ms (median of {len(self.allreduce_s)})",
            f"    MODELLED on {self.world_size} x {self.target}: {self.modelled_allreduce_s * 1e3:,.4f} ms ({link})",
        ])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _entry(name: str, seed: int) -> Any:
    from accelkit import zoo

    return zoo.get(name, seed=seed)


def _batches(n: int, batch_size: int, steps: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=g)[:batch_size] for _ in range(steps)]


def _flat_grads(params: list[torch.nn.Parameter]) -> torch.Tensor:
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])


def _set_grads(params: list[torch.nn.Parameter], flat: torch.Tensor) -> None:
    at = 0
    for p in params:
        n = p.numel()
        p.grad = flat[at:at + n].view_as(p).clone()
        at += n


def _train_rank(rank: int, world_size: int, init_method: str, cfg: dict[str, Any], out: str | None,
                entry: Any = None) -> None:
    """One process of the group: train on its shard of every batch, all-reduce, step; rank 0 writes the result.
    ``entry``: the zoo entry the parent built (a forked process has its own copy), else built here."""
    torch.set_num_threads(1)  # the processes share this machine's cores
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=cfg["timeout_s"]))
    try:
        entry = entry if entry is not None else _entry(cfg["model"], cfg["seed"])
        model, loss_fn, ds = entry.model, entry.loss_fn, entry.dataset
        model.eval()  # no dropout draws, batch norm on running statistics: the shards add up exactly
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=cfg["lr"])
        per = cfg["batch_size"] // world_size
        times, losses, first_grads = [], [], None
        for idx in _batches(len(ds), cfg["batch_size"], cfg["steps"], cfg["seed"]):
            shard = idx[rank * per:(rank + 1) * per]  # this process's slice of the global batch
            opt.zero_grad(set_to_none=True)
            loss = entry.spec.batch_loss(model, loss_fn, ds.batch(shard))
            loss.backward()
            flat = _flat_grads(params)
            dist.barrier()  # start together: time the collective, not the slowest backward
            t0 = time.perf_counter()
            dist.all_reduce(flat)  # sum over processes (gloo: a ring over loopback TCP)
            took = torch.tensor([time.perf_counter() - t0, float(loss.detach())], dtype=torch.float64)
            flat /= world_size  # the mean gradient over the whole batch
            _set_grads(params, flat)
            if first_grads is None:
                first_grads = flat.clone()
            opt.step()
            slowest = took[:1].clone()
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            mean_loss = took[1:].clone()
            dist.all_reduce(mean_loss)
            times.append(float(slowest))
            losses.append(float(mean_loss) / world_size)
        if rank == 0 and out is not None:
            weights = torch.cat([p.detach().reshape(-1) for p in params])
            torch.save({"grads": first_grads, "weights": weights, "times": torch.tensor(times, dtype=torch.float64),
                        "losses": torch.tensor(losses, dtype=torch.float64)}, out)
    finally:
        dist.destroy_process_group()


def _single_process(cfg: dict[str, Any], entry: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: one process, the whole batch, the same steps; its first gradient and its final weights."""
    model, loss_fn, ds = entry.model, entry.loss_fn, entry.dataset
    model.eval()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=cfg["lr"])
    first = None
    for idx in _batches(len(ds), cfg["batch_size"], cfg["steps"], cfg["seed"]):
        opt.zero_grad(set_to_none=True)
        entry.spec.batch_loss(model, loss_fn, ds.batch(idx)).backward()
        if first is None:
            first = _flat_grads(params).detach().clone()
        opt.step()
    assert first is not None
    return first, torch.cat([p.detach().reshape(-1) for p in params])


def modelled_allreduce_s(nbytes: float, chips: int, target: str, precision: str = "fp32") -> float:
    """accelkit's modelled all-reduce of ``nbytes`` over ``chips`` chips of ``target`` (its family's collective:
    a ring over each chip's links, rings along a torus's axes), never a measurement."""
    spec = hardware.get(target)
    precision = precision if precision in spec.peak_flops else next(iter(spec.peak_flops))
    return model_for(spec.family).allreduce_s(nbytes, chips, rates(spec, precision), spec)


def data_parallel(model: str = "ffn_logreg", *, world_size: int = 2, steps: int = 2, batch_size: int | None = None,
                  lr: float = 0.05, target: str = "h100", seed: int = 0, timeout_s: float = 120.0) -> DataParallelRun:
    """Train zoo model ``model`` data parallel over ``world_size`` CPU processes (gloo) for ``steps`` SGD steps
    on global batches of ``batch_size`` (default: 16 per process), check it against one process on the whole
    batch, and put the measured all-reduce beside the modelled one on ``world_size`` x ``target``."""
    from accelkit import zoo

    if not isinstance(model, str) or model not in zoo.names():
        raise ArgumentError(f"model must be a zoo model's name, not {got(model)}",
                            fix=f"use one of {zoo.names()}, e.g. data_parallel('braggnn')")
    whole("world_size", world_size, at_least=2, example="world_size=2")
    whole("steps", steps, example="steps=3")
    batch_size = 16 * world_size if batch_size is None else whole("batch_size", batch_size, example="batch_size=32")
    if batch_size % world_size:
        raise ArgumentError(f"batch_size {batch_size} does not split evenly over {world_size} processes",
                            fix=f"use a multiple of {world_size}, e.g. batch_size={world_size * 16}")
    spec = hardware.get(target)
    if spec.max_chips is not None and world_size > spec.max_chips:
        raise ArgumentError(f"{world_size} chips is more than the largest {spec.name} system ({spec.max_chips})",
                            fix=f"use world_size <= {spec.max_chips}, or another target")
    cfg = {"model": model, "steps": steps, "batch_size": batch_size, "lr": float(lr), "seed": seed,
           "timeout_s": timeout_s}
    import torch.multiprocessing as mp

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    entry = _entry(model, seed)  # built once: forked processes start from copies of the same weights and data
    entry.model, entry.dataset, entry.loss_fn  # noqa: B018 - made now, before the processes fork
    if method == "fork":  # torch.optim imports torch._dynamo on first use (seconds): once here, not per process
        import torch._dynamo  # noqa: F401
    with tempfile.TemporaryDirectory(prefix="accelkit-ddp-") as tmp:
        out = str(Path(tmp) / "rank0.pt")
        args = (world_size, f"tcp://127.0.0.1:{_free_port()}", cfg, out, entry if method == "fork" else None)
        try:
            mp.start_processes(_train_rank, args=args, nprocs=world_size, join=True, start_method=method)
        except Exception as exc:
            raise DataParallelError(f"a data-parallel process failed: {type(exc).__name__}: {str(exc).strip()[-500:]}",
                                    fix="run it with world_size=2 and a small model first; each process must "
                                        "be able to open a TCP port on 127.0.0.1") from None
        result = torch.load(out, weights_only=True)
    grads, weights = _single_process(cfg, entry)  # this process's entry: untouched by the forked ones
    nbytes = int(result["grads"].numel() * result["grads"].element_size())
    return DataParallelRun(
        model=model, world_size=world_size, steps=steps, batch_size=batch_size, gradient_bytes=nbytes,
        max_grad_diff=float((result["grads"] - grads).abs().max()),
        max_weight_diff=float((result["weights"] - weights).abs().max()),
        losses=tuple(float(x) for x in result["losses"]), allreduce_s=tuple(float(t) for t in result["times"]),
        target=spec.name, modelled_allreduce_s=modelled_allreduce_s(nbytes, world_size, spec.name),
        link_Bps=spec.chip_to_chip_Bps, link_source=spec.source("chip_to_chip_Bps"),
    )


def main(argv: list[str] | None = None) -> int:
    """``torchrun --nproc-per-node N -m accelkit.runtime.ddp --model NAME``: each process trains its shard; rank 0
    prints the measured all-reduce per step beside the modelled one."""
    parser = argparse.ArgumentParser(prog="python -m accelkit.runtime.ddp", description=main.__doc__)
    parser.add_argument("--model", default="ffn_logreg")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--target", default="h100")
    args = parser.parse_args(argv)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    cfg = {"model": args.model, "steps": args.steps, "batch_size": args.batch_size or 16 * world, "lr": args.lr,
           "seed": 0, "timeout_s": 120.0}
    with tempfile.TemporaryDirectory(prefix="accelkit-ddp-") as tmp:
        out = str(Path(tmp) / "rank0.pt")
        _train_rank(rank, world, "env://", cfg, out)
        if rank == 0:
            result = torch.load(out, weights_only=True)
            nbytes = int(result["grads"].numel() * 4)
            measured = statistics.median(float(t) for t in result["times"])
            print(f"{args.model}: {world} processes, all-reduce of {nbytes / 1e6:.3f} MB per step: "
                  f"MEASURED {measured * 1e3:.3f} ms on this host, MODELLED "
                  f"{modelled_allreduce_s(nbytes, world, args.target) * 1e3:.4f} ms on {world} x {args.target}")
    return 0


if __name__ == "__main__":  # pragma: no cover - torchrun's entry
    sys.exit(main())


__all__ = ["DataParallelError", "DataParallelRun", "data_parallel", "main", "modelled_allreduce_s"]
