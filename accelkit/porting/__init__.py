"""Porting: check a model against a target's op-support table, then rewrite it so it runs.

    import accelkit as ak
    report = ak.check(model, inputs, target="tsp")   # what stops it, where, and the fix
    print(report)                                    # a table; in Jupyter an HTML table
    result = ak.port(model, inputs, target="tsp")    # apply the recipes the report asks for
    result.model, result.changes, result.max_abs_error, result.report_after

The op-support tables are data (``accelkit/porting/tables/*.toml``), each entry with its reason
and its source; the recipes and their tolerances are in :mod:`accelkit.porting.recipes`.
"""

from accelkit.porting.check import KINDS, CompatibilityReport, Finding, check
from accelkit.porting.port import GatedMLP, PortResult, exercise_check, port
from accelkit.porting.recipes import RECIPES, Change, Tolerance
from accelkit.porting.support import SupportTable, load_table, table_for

__all__ = [
    "KINDS",
    "RECIPES",
    "Change",
    "CompatibilityReport",
    "Finding",
    "GatedMLP",
    "PortResult",
    "SupportTable",
    "Tolerance",
    "check",
    "exercise_check",
    "load_table",
    "port",
    "table_for",
]
