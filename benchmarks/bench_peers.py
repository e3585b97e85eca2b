"""accelkit against a peer simulator (GenZ, the ``[peers]`` extra) on measured LLM-serving latencies:
each tool's median |error| per system and whether accelkit is the closer one. Prints the per-case table.
Runs ``accelkit.sim.peers.compare_peers()`` (~40 s); without GenZ the GenZ rows are skipped and the
table says how to install it."""

from __future__ import annotations

from accelkit.sim.peers import compare_peers


def run() -> list[dict]:
    result = compare_peers(progress=False)
    print(result.table())
    rows: list[dict] = []
    for system in result.systems:
        ak, gz = result.median_abs_error("accelkit", system), result.median_abs_error("genz", system)
        assert ak is not None
        rows.append({"name": f"{system} accelkit median |error|", "value": round(100 * ak, 1), "unit": "%",
                     "goal": "", "ok": None})
        if gz is not None:
            rows.append({"name": f"{system} GenZ median |error|", "value": round(100 * gz, 1), "unit": "%",
                         "goal": "", "ok": None})
            rows.append({"name": f"accelkit ahead of GenZ on {system}", "value": round(100 * (gz - ak), 1),
                         "unit": "points", "goal": "accelkit median |error| < GenZ's", "ok": result.ahead(system)})
    rows.append({"name": "compare_peers() wall time", "value": round(result.seconds, 1), "unit": "s", "goal": "",
                 "ok": None})
    return rows
