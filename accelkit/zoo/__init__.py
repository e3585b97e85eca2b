"""The zoo: the ALCF example models, each with its data, loss, metric, a stated quality goal and a training loop.

    import accelkit as ak
    ak.zoo.names()                      # ['bert_small', 'braggnn', 'ffn_logreg', 'gpt_small', 'unet2d']
    entry = ak.zoo.get("braggnn")       # a fresh, seeded model and its data
    print(entry.summary())
    result = entry.train()              # plain PyTorch on this CPU; result["metric"], result["goal_met"]
    prog = ak.compile(entry.model, entry.example_inputs, target="sn40l")

Every entry trains to its ``quality_goal`` on this CPU in seconds with its default recipe.
"""

from __future__ import annotations

from accelkit.errors import UnknownNameError
from accelkit.zoo import bert_small, braggnn, ffn_logreg, gpt_small, unet2d
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec, ZooEntry, count_parameters

_SPECS: dict[str, Spec] = {m.SPEC.name: m.SPEC for m in (ffn_logreg, braggnn, unet2d, gpt_small, bert_small)}


def names() -> list[str]:
    """The zoo's model names, sorted."""
    return sorted(_SPECS)


def get(name: str, seed: int = 0) -> ZooEntry:
    """A new :class:`ZooEntry` for ``name``: its model's weights and its data come from ``seed``."""
    if name not in _SPECS:
        raise UnknownNameError(f"no zoo model named {name!r}; the zoo has: {', '.join(names())}",
                               fix=f"use one of ak.zoo.names(), e.g. ak.zoo.get({names()[0]!r})")
    return ZooEntry(_SPECS[name], seed)


__all__ = ["Data", "QualityGoal", "Recipe", "Spec", "ZooEntry", "count_parameters", "get", "names"]
