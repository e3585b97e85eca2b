"""``make tour``: the workshop's workflow, headless, on one small model, printing each step's result.

    python -m accelkit.tour [--target sn40l] [--quick]

Step by step: profile (measured on this host) -> the hardware (catalog figures, sourced) ->
check and port for the target -> capture and compile for every target -> save and load the
artifact -> train through a Session on a training target (``--train-target``), then infer on
``--target`` (on the TSP through GroqFlow, an inference flow) and report held-out accuracy. Every
number printed says whether it was measured here or counted / modelled.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import torch
from torch import nn

import accelkit as ak
from accelkit.families import tsp as tsp_family
from accelkit.sim.report import fmt_s


class TourModel(nn.Module):
    """A small classifier in the shape of the workshops' feed-forward examples (LayerNorm, exact GELU and
    residuals, as in the stock BERT checkpoints GroqFlow's proof points compile)."""

    def __init__(self, in_features: int = 64, width: int = 256, classes: int = 10, depth: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(in_features, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU()) for _ in range(depth))
        self.out = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def _toy_task(n: int, *, seed: int, in_features: int = 64, classes: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` noisy samples whose class shifts one input feature: learnable, and a held-out set is just
    another seed."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = torch.randn(n, in_features, generator=g) + nn.functional.one_hot(y, in_features).float() * 3
    return x, y


def _step(n: int, title: str) -> None:
    print(f"\n=== step {n}: {title} " + "=" * max(0, 60 - len(title)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.tour", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="tsp", help="target for the check/port/compile steps (default tsp)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--train-target", default="sn40l",
                        help="target the model trains on in step 5 (default sn40l; inference runs on --target)")
    parser.add_argument("--epochs", type=int, default=4, help="training epochs over the toy set (default 4)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model: nn.Module = TourModel().eval()
    inputs = (torch.randn(args.batch, 64),)
    t_start = time.perf_counter()

    _step(1, "profile on this host (measured)")
    prof = ak.profile(model, inputs)
    print(prof.summary())

    _step(2, "understand the hardware (catalog figures, each with a source)")
    print(ak.hardware.catalog_table())
    spec = ak.hardware.get(args.target)
    print()
    print(spec.describe())

    _step(3, f"check and modify for {args.target}")
    report = ak.check(model, inputs, target=args.target)
    print(report)
    if not report.ok:
        result = ak.port(model, inputs, target=args.target)
        print(result)
        model, inputs = result.model, result.example_inputs

    _step(4, "capture and compile for every target (counted and planned, not timed)")
    graph = ak.capture(model, inputs)
    print(graph.summary())
    print()
    print(f"{'target':<8} {'family':<24} {'precision':<9} {'mode':<17} {'kernels':>7} {'weights/chip':>13}")
    for name in ak.hardware.names():
        if name == "host":
            continue
        s = ak.hardware.get(name)
        precision = ak.hardware.precision.default_for(s)
        prog = ak.compile(model, inputs, target=name, precision=precision)
        print(f"{name:<8} {s.family:<24} {precision:<9} {prog.mode:<17} {len(prog.kernels):>7} "
              f"{prog.memory_plan.weights_bytes / 1e6:>10.2f} MB")
    prog = ak.compile(model, inputs, target=args.target,
                      precision=ak.hardware.precision.default_for(spec))
    print()
    print(prog.summary())
    with tempfile.TemporaryDirectory() as tmp:
        path = prog.save(f"{tmp}/tour.akp")
        back = ak.load(path)
        print(f"\nsaved and loaded the artifact: mode {back.mode!r}, {len(back.kernels)} kernels, "
              f"{len(back.weights or {})} weight tensors (JSON + safetensors, no pickle)")

    _step(5, "run: train, then infer, through the vendors' flows (real numerics, modelled clock)")
    train_target = args.train_target
    train_x, train_y = _toy_task(512, seed=1)
    held_x, held_y = _toy_task(256, seed=2)  # samples the model never trains on
    train_spec = ak.hardware.get(train_target)
    precision = "bf16" if "bf16" in train_spec.peak_flops else "fp32"  # fp16 matmuls are slow on most CPUs
    session = ak.Session(model, target=train_target, optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3),
                         loss_fn=nn.CrossEntropyLoss(), precision=precision, batch_size=args.batch)
    losses = []
    for epoch in range(args.epochs):
        order = torch.randperm(len(train_x), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(train_x) - args.batch + 1, args.batch):
            idx = order[i:i + args.batch]
            loss = session.run(train_x[idx], labels=train_y[idx]).loss
            assert loss is not None  # the session has a loss_fn and labels
            losses.append(float(loss))
    print(f"trained on {train_target} ({train_spec.family}): loss {losses[0]:.3f} -> {losses[-1]:.3f} over "
          f"{len(losses)} steps of batch {args.batch} ({precision} emulated)")
    print(session.report())
    model.eval()
    if spec.family == tsp_family.FAMILY:  # GroqFlow is an inference flow: build once, then call
        import accelkit.facades.groqflow as groqflow

        with tempfile.TemporaryDirectory() as tmp:
            gmodel = groqflow.groqit(model, {"x": held_x}, build_name="tour", cache_dir=tmp, monitor=False)
            logits = gmodel(x=held_x)
            perf = gmodel.estimate_performance()
        where = f"GroqFlow on {perf.chips} x {args.target}"
        timing = f"{fmt_s(perf.latency_s)} per batch of {len(held_x)}, modelled"
    else:
        infer = ak.Session(model, target=args.target, precision=precision).run(held_x, sections=["fwd"])
        logits, where = infer.outputs, f"ak.Session on {args.target}, forward only"
        timing = f"{fmt_s(infer.simulated_time_s)} per batch of {len(held_x)}, modelled"
    accuracy = (logits.float().argmax(-1) == held_y).float().mean()
    print(f"inference ({where}): held-out accuracy {accuracy:.1%} on {len(held_x)} samples it never trained on "
          f"(chance: 10%); {timing}")
    print(f"\ntour done in {time.perf_counter() - t_start:.1f} s (measured on this host)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
