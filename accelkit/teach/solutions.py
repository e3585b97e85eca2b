"""Solutions to the notebook exercises, kept off the learner's page.

The notebooks never import this module; ``teach.check`` reads it only after ``teach.setup(solutions=True)``
(the ``solutions`` papermill parameter CI sets), for an answer still left as ``...``. Each solution takes the
same context as its checker and computes the answer the way a learner would, from the package's values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

SOLUTIONS: dict[str, Callable[..., Any]] = {
    "01.linear_flops": lambda *, batch, in_features, out_features: 2 * batch * in_features * out_features,
    "01.hottest_op": lambda *, prof: prof.ops[0].op,
    "01.zero_flop_time": lambda *, prof: sum(r.share for r in prof.ops if r.flops == 0),
    "02.ridge_point": lambda *, target, precision, tier: _spec(target).peak(precision)
    / _spec(target).tier(tier).bandwidth_Bps,
    "02.weights_fit": lambda *, target, params, precision: params * (4 if precision == "fp32" else 2)
    <= _usable_on_chip(target),
    "03.first_recipe": lambda *, report: next(f.recipe for f in report.findings if f.severity == "error"),
    "03.gated_mlp": lambda *, target="tsp": _solved_gated_mlp(),
    "04.intensity": lambda *, program, index: program.kernels[index].flops
    / (program.kernels[index].bytes_read + program.kernels[index].bytes_written),
    "04.bound": lambda *, program, index, tier: "compute" if program.kernels[index].intensity
    >= _spec(program.target).peak(program.precision) / _spec(program.target).tier(tier).bandwidth_Bps else "memory",
    "05.throughput": lambda *, report: report.samples / report.simulated_time_s,
    "05.combined_batch": lambda *, options, micro_batch: micro_batch * options.Training.gradient_accumulation
    * options.replication_factor * options.device_iterations,
    "05.device_iterations": lambda *, effect, share: math.ceil((1 - share) / share * effect.round_trip_s
                                                               / effect.iteration_s - 1e-9),
    "06.fastest": lambda *, programs: min(programs, key=lambda t: programs[t].report.step_time_s),
    "06.speedup": lambda *, programs, fast, slow: programs[slow].report.step_time_s
    / programs[fast].report.step_time_s,
    "07.ttft": lambda *, estimate: estimate.ttft_s * 1e3,
    "07.decode_memory_bound": lambda *, estimate: estimate.decode_bound == "memory",
    "08.biggest_model": lambda: _biggest_zoo_model(),
    "08.box_batch": lambda *, program: [d for d in range(1, program.batch_size + 1)
                                        if program.batch_size % d == 0 and d % program.parallel.data == 0],
    "10.recompile": lambda: {change: change.split()[0] in ("batch", "sequence", "bf16", "1")
                             for change in _changes()},
    "10.commands": lambda *, batch, micro_batch, pef_name: [
        f"python app.py compile -b {batch} -mb {micro_batch} --pef-name={pef_name}",
        f"python app.py run -b {batch} -mb {micro_batch} --pef=out/{pef_name}/{pef_name}.pef"],
    "09.three_families": lambda: ["a100", "sn40l", "tsp"],
    "11.fastest_chip": lambda *, sweep, model, batch: _fastest_chip(sweep, model, batch),
    "11.allreduce_gap": lambda *, run: run.measured_allreduce_s / run.modelled_allreduce_s,
}


def _fastest_chip(df: Any, model: str, batch: int) -> str:
    rows = df[(df.status == "ok") & (df.model == model) & (df.batch == batch)]
    rows = rows[~rows.training.astype(bool)] if "training" in rows else rows
    return str(rows.loc[rows.time_per_sample_s.idxmin()].target)


def _spec(target: str) -> Any:
    from accelkit import hardware

    return hardware.get(target)


def _usable_on_chip(target: str) -> int:
    from accelkit.hardware.capacity import usable_on_chip_bytes

    return usable_on_chip_bytes(_spec(target))


def _solved_gated_mlp() -> type:
    import torch

    from accelkit.porting import GatedMLP

    class SolvedGatedMLP(GatedMLP):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.fc1(x)
            h = torch.where(h.mean() > 0, torch.relu(h), torch.tanh(h))  # both branches, no Python `if`
            return self.fc2(h)

    return SolvedGatedMLP


def _biggest_zoo_model() -> str:
    from accelkit import zoo

    return max(zoo.names(), key=lambda n: sum(p.numel() for p in zoo.get(n).model.parameters()))


def _changes() -> list[str]:
    from accelkit.teach.checkers import CHANGES

    return list(CHANGES)


def solve(name: str, **context: Any) -> Any:
    """The shipped answer to exercise ``name`` for ``context``."""
    if name not in SOLUTIONS:
        from accelkit.teach.registry import ExerciseFailed

        raise ExerciseFailed(f"exercise {name} has no shipped solution", fix="add one to accelkit/teach/solutions.py")
    return SOLUTIONS[name](**context)
