"""``make tour``: the workshop's workflow, headless, on one small model, printing each step's result.

    python -m accelkit.tour [--target sn40l] [--quick]

Step by step: profile (measured on this host) -> the hardware (catalog figures, sourced) ->
check and port for the target -> capture and compile for every target -> save and load the
artifact -> train and infer through a Session. Every number printed says whether it was
measured here or counted / modelled.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import torch
from torch import nn

import accelkit as ak


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


def _step(n: int, title: str) -> None:
    print(f"\n=== step {n}: {title} " + "=" * max(0, 60 - len(title)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.tour", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="tsp", help="target for the check/port/compile steps (default tsp)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
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
        precision = "bf16" if "bf16" in s.peak_flops else "fp16"
        prog = ak.compile(model, inputs, target=name, precision=precision)
        print(f"{name:<8} {s.family:<24} {precision:<9} {prog.mode:<17} {len(prog.kernels):>7} "
              f"{prog.memory_plan.weights_bytes / 1e6:>10.2f} MB")
    prog = ak.compile(model, inputs, target=args.target,
                      precision="bf16" if "bf16" in spec.peak_flops else "fp16")
    print()
    print(prog.summary())
    with tempfile.TemporaryDirectory() as tmp:
        path = prog.save(f"{tmp}/tour.akp")
        back = ak.load(path)
        print(f"\nsaved and loaded the artifact: mode {back.mode!r}, {len(back.kernels)} kernels, "
              f"{len(back.weights or {})} weight tensors (JSON + safetensors, no pickle)")

    _step(5, f"run: train and infer through ak.Session on {args.target} (real numerics, modelled clock)")
    labels = torch.randint(0, 10, (args.batch,), generator=torch.Generator().manual_seed(0))
    x = inputs[0] + torch.nn.functional.one_hot(labels, 64).float() * 3  # a learnable toy task
    precision = "bf16" if "bf16" in spec.peak_flops else "fp32"  # fp16 matmuls are slow on most CPUs
    session = ak.Session(model, target=args.target, optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3),
                         loss_fn=nn.CrossEntropyLoss(), precision=precision)
    losses = []
    for _ in range(20):
        loss = session.run(x, labels=labels).loss
        assert loss is not None  # the session has a loss_fn and labels
        losses.append(float(loss))
    print(f"training loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps ({precision} emulated)")
    infer = session.run(x, sections=["fwd"])
    accuracy = (infer.outputs.argmax(-1) == labels).float().mean()
    print(f"inference: accuracy {accuracy:.0%} on the training batch; one step {infer.simulated_time_s * 1e6:.1f} µs "
          "modelled")
    print(session.report())
    print(f"\ntour done in {time.perf_counter() - t_start:.1f} s (measured on this host)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
