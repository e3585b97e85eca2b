"""One way to read inputs and one way to compare outputs (accelkit.graph.values), used by every entry point."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.graph.values import compare, named_inputs, split_inputs, tensor_leaves


def test_split_inputs_reads_tensors_tuples_and_keywords_and_refuses_the_rest() -> None:
    x = torch.ones(2)
    assert split_inputs(x) == ((x,), {})
    assert split_inputs([x, x])[0] == (x, x)
    assert split_inputs({"input_ids": x}) == ((), {"input_ids": x})
    assert split_inputs(None) == ((), {})
    with pytest.raises(ak.AccelkitError, match="example_inputs must be a tensor") as e:
        split_inputs(None, allow_none=False)
    assert "torch.randn" in e.value.fix
    with pytest.raises(ak.AccelkitError, match="not str"):
        split_inputs("x")

    class Two(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a + b

    assert list(named_inputs(Two(), (x, x))) == ["a", "b"]
    assert list(named_inputs(None, (x, x))) == ["arg0", "arg1"]


def test_compare_measures_every_tensor_the_same_way() -> None:
    a = torch.tensor([1.0, 2.0, float("nan")])
    same = compare((a, {"k": a}), (a.clone(), {"k": a.clone()}))
    assert same.same_structure and same.max_abs == 0 and same.within(0.0)  # NaN where both have NaN: equal
    off = compare(a + torch.tensor([0.0, 0.5, 0.0]), a)
    assert off.max_abs == pytest.approx(0.5) and off.max_rel == pytest.approx(0.25)
    assert not off.within(0.1) and off.within(0.5)
    one_nan = compare(torch.tensor([float("nan")]), torch.tensor([1.0]))
    assert math.isinf(one_nan.max_abs) and not one_nan.within(1e9)
    ints = compare(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert ints.max_rel == 1.0 and ints.max_abs == 1.0
    zeros = compare(torch.tensor([1e-3]), torch.zeros(1))  # an all-zero reference: the absolute difference
    assert zeros.max_rel == pytest.approx(1e-3)
    shape = compare(torch.ones(2, 3), torch.ones(3, 2))
    assert not shape.same_structure and shape.shapes_got == ((2, 3),) and not shape.within(math.inf)
    assert len(tensor_leaves({"a": a, "b": [a, 3, "text"]})) == 2


def test_no_module_reads_inputs_or_compares_outputs_its_own_way() -> None:
    """The old private copies (five input normalisers, three comparators) are gone: a function of these
    names is defined only in accelkit.graph.values."""
    names = {"split_inputs", "_split_inputs", "named_inputs", "tensor_leaves", "_leaves", "compare", "_compare_outputs"}
    root = Path(ak.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        if path.name == "values.py" and path.parent.name == "graph":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level functions
            if isinstance(node, ast.FunctionDef) and node.name in names:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert found == []
