"""Stand-ins for the two evaluation harnesses the Cerebras Model Zoo 2.x Trainer imports at start-up, answered only
when they are not installed: EleutherAI's ``lm_eval`` (lm-evaluation-harness, on PyPI as ``lm-eval``) and BigCode's
``bigcode_eval`` (bigcode-evaluation-harness, only on GitHub).

The Trainer's ``trainer.extensions`` package defines its ``EleutherEvalHarness`` and ``BigCodeEvalHarness``
callbacks on their base classes, so ``import cerebras.modelzoo.trainer`` needs the names even for a run that
never evaluates with them. Here the names exist; using one (running a harness task) is refused, saying what to do:
leave the harness callback out of the config, or install the real harness (``pip install lm-eval``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from accelkit.facades.cerebras.clock import CerebrasError


def _refuse(api: str) -> CerebrasError:
    return CerebrasError(f"{api}: the evaluation harness is not installed (accelkit answered its import so the "
                         "Model Zoo's Trainer could start), and its generation tasks are not simulated",
                         fix="leave the EleutherEvalHarness / BigCodeEvalHarness callbacks out of the config, "
                             "or install the harness (pip install lm-eval)")


class _Refusing:
    api = "the evaluation harness"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _refuse(self.api)


class LM(_Refusing):
    """``lm_eval.api.model.LM``: the base of a harness model."""

    api = "lm_eval.api.model.LM"


class Task(_Refusing):
    """``lm_eval.api.task.Task`` / ``bigcode_eval.base.Task``."""

    api = "the harness's Task"


class Evaluator(_Refusing):
    """``bigcode_eval.evaluator.Evaluator``."""

    api = "bigcode_eval.evaluator.Evaluator"


class TaskManager(_Refusing):
    """``lm_eval.tasks.TaskManager``."""

    api = "lm_eval.tasks.TaskManager"


@dataclasses.dataclass
class Instance:
    """``lm_eval.api.instance.Instance``: one request to the model."""

    request_type: str = ""
    doc: Any = None
    arguments: tuple[Any, ...] = ()
    idx: int = 0


def register_model(*names: str) -> Callable[[type], type]:
    """``@register_model(name)``: nothing to register with (no harness here)."""
    return lambda cls: cls


def _refusing_function(api: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise _refuse(api)
    refused.__name__ = api.rsplit(".", 1)[-1]
    return refused


def _int_or_none_list_arg_type(*args: Any, **kwargs: Any) -> Any:
    raise _refuse("lm_eval's command-line seeds")


_handle_non_serializable = _refusing_function("lm_eval.__main__._handle_non_serializable")  # lm_eval 0.4.2's name
DEFAULT_RESULTS_FILE = "results.json"


get_task_list = _refusing_function("lm_eval.evaluator_utils.get_task_list")
get_task_dict = _refusing_function("lm_eval.tasks.get_task_dict")
handle_non_serializable = _refusing_function("lm_eval.utils.handle_non_serializable")
make_table = _refusing_function("lm_eval.utils.make_table")
pattern_match = _refusing_function("lm_eval.utils.pattern_match")
simple_evaluate = _refusing_function("lm_eval.evaluator.simple_evaluate")
request_caching_arg_to_dict = _refusing_function("lm_eval.evaluator.request_caching_arg_to_dict")
load_yaml_config = _refusing_function("lm_eval.utils.load_yaml_config")
update_code_gens = _refusing_function("bigcode_eval.utils.update_code_gens")
handle_stop_sequences = _refusing_function("lm_eval.models.utils.handle_stop_sequences")
get_task = _refusing_function("bigcode_eval.tasks.get_task")
SPACING = " " * 47
TASK_REGISTRY: dict[str, Any] = {}
ALL_TASKS: list[str] = []


class _Namespace:
    def __init__(self, **attrs: Any) -> None:
        vars(self).update(attrs)


evaluator = _Namespace(simple_evaluate=simple_evaluate, request_caching_arg_to_dict=request_caching_arg_to_dict)
utils = _Namespace(load_yaml_config=load_yaml_config, SPACING=SPACING, pattern_match=pattern_match,
                   handle_non_serializable=handle_non_serializable, make_table=make_table,
                   update_code_gens=update_code_gens)
tasks = _Namespace(TaskManager=TaskManager, get_task_dict=get_task_dict, get_task=get_task,
                   TASK_REGISTRY=TASK_REGISTRY, ALL_TASKS=ALL_TASKS)
