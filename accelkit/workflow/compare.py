"""Past an op the target refuses, two ways compared: run it on the host (``fallback="host"``) or port it away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelkit.porting import port
from accelkit.workflow.compiling import compile as compile_


@dataclass(frozen=True)
class FallbackOrPort:
    """The two ways past an op the target refuses, compiled and modelled side by side: run it on the host
    (``fallback``, a program with host partitions) or rewrite it away (``ported``, ``ak.port``'s model, all on
    the device). ``port`` is the :class:`~accelkit.porting.PortResult` (its changes, its verified error)."""

    target: str
    fallback: Any  # CompiledProgram with host partitions
    ported: Any  # CompiledProgram of the ported model
    port: Any  # PortResult

    def rows(self) -> list[dict[str, Any]]:
        """One row per way: modelled step time, its host and transfer seconds, host partitions, throughput."""
        out = []
        for way, prog in (("fallback='host'", self.fallback), ("ak.port", self.ported)):
            r = prog.report
            out.append({"way": way, "step_s": r.step_time_s, "device_s": r.step_time_s - r.host_s - r.transfer_s,
                        "host_s": r.host_s, "transfer_s": r.transfer_s, "host_partitions": r.host_partitions,
                        "samples_per_s": r.throughput})
        return out

    @property
    def speedup(self) -> float:
        """How many times faster the ported program's step is than the fallback one's (modelled)."""
        return self.fallback.report.step_time_s / self.ported.report.step_time_s

    def summary(self) -> str:
        from accelkit.cost.report import fmt_s

        head = f"{'MODELLED on ' + self.target:<22}{'step':>10}{'device':>10}{'host CPU':>10}{'transfers':>11}  partitions"
        lines = [head]
        for row in self.rows():
            lines.append(f"{row['way']:<22}{fmt_s(row['step_s']):>10}{fmt_s(row['device_s']):>10}"
                         f"{fmt_s(row['host_s']):>10}{fmt_s(row['transfer_s']):>11}  {row['host_partitions']}")
        faster = (f"porting is {self.speedup:.3g}x faster per step" if self.speedup >= 1 else
                  f"the host fallback is {1 / self.speedup:.3g}x faster per step (the ported ops' fixed costs "
                  "outweigh the host's work at this size)")
        lines.append(f"{faster}; the rewrite changes the outputs by at most {self.port.max_abs_error:.2g} "
                     f"(verified within {self.port.tolerance})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def fallback_or_port(model: Any, example_inputs: Any, *, target: str, precision: str = "bf16",
                     **compile_kw: Any) -> FallbackOrPort:
    """Compile ``model`` for ``target`` both ways past the ops it refuses: ``fallback="host"`` as it is, and
    after ``ak.port`` rewrote them (every change verified against the original outputs)."""

    host = compile_(model, example_inputs, target=target, precision=precision, fallback="host", **compile_kw)
    result = port(model, example_inputs, target)
    ported = compile_(result.model, result.example_inputs, target=target, precision=precision, **compile_kw)
    return FallbackOrPort(host.spec.name, host, ported, result)


__all__ = ["FallbackOrPort", "fallback_or_port"]
