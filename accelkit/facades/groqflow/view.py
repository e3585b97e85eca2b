"""``gmodel.groqview()``: accelkit's own view of a build, where GroqFlow would open GroqView.

GroqView is Groq's viewer of the compiler's cycle-by-cycle schedule on the chip. accelkit has no such file;
it writes one HTML page with its placement map of the compiled program (which kernels sit where on the
TSP's functional slices) and its modelled timeline, so the question GroqView answers ("what runs where,
and for how long") has an answer here too. Both figures are MODELLED, from published figures.
"""

from __future__ import annotations

from pathlib import Path

from accelkit.compiler.program import CompiledProgram


def write_view(prog: CompiledProgram, path: Path, title: str) -> Path:
    """Write the placement map and the timeline of ``prog`` to ``path`` (one HTML page); returns the path."""
    from accelkit.viz.perf import timeline
    from accelkit.viz.placement import placement_map

    path.parent.mkdir(parents=True, exist_ok=True)
    figures = [placement_map(prog), timeline(prog.report)]
    body = "".join(fig.to_html(full_html=False, include_plotlyjs=(i == 0))
                   for i, fig in enumerate(figures))
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
                    f"<h2>{title}</h2><p>accelkit's view of this build (GroqView is Groq's tool): placement and "
                    f"timeline are MODELLED, not measured.</p>{body}</body></html>")
    return path


__all__ = ["write_view"]
