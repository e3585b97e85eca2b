"""``optimum.graphcore``: Hugging Face's trainer for the IPU (``IPUConfig``, ``IPUTrainingArguments``, ``IPUTrainer``)
on accelkit's PopTorch facade, as Graphcore's Hugging Face tutorials use it (the ViT fine-tuning walkthrough).

What happens is what optimum-graphcore does, through :mod:`accelkit.facades.poptorch`:

- :class:`IPUConfig` holds optimum-graphcore's fields with its documented defaults (``layers_per_ipu=[-1]``,
  ``ipus_per_replica=len(layers_per_ipu)``, ``gradient_accumulation_steps=1``, ``matmul_proportion=0.2``,
  ``enable_half_partials=True``...; unknown keys refused). ``to_options(for_inference=...)`` builds the
  ``poptorch.Options`` optimum-graphcore builds: replication, device iterations, gradient accumulation (training),
  ``PipelinedExecution`` (training) / ``ShardedExecution`` (inference), available memory per IPU, half partials,
  executable cache, stochastic rounding. ``from_pretrained`` reads a local ``ipu_config.json``; a Hub name
  (``Graphcore/vit-base-ipu``) is a download, answered under ``--synthetic-data`` by :data:`HUB_CONFIGS` (said).
- :class:`IPUTrainer` pipelines the model as optimum-graphcore's ``PipelinedViTForImageClassification.parallelize``
  does (embeddings on IPU 0, the encoder layers by ``layers_per_ipu``, wildcards split as optimum-graphcore splits
  them, layer norm and classifier on the last IPU; a recomputation checkpoint after each layer with
  ``recompute_checkpoint_every_layer``), casts it to fp16 unless ``fp32=True``, and compiles it with
  ``poptorch.trainingModel`` / ``inferenceModel`` on those options: real PyTorch numerics on this CPU, the IPUs'
  time modelled, and every step is one call of the compiled model (``--max-calls`` counts them). Its optimizer is
  optimum-graphcore's (``poptorch.optim.AdamW`` without bias correction, no weight decay on biases and layer norms,
  fp16 first-order state unless ``fp32``; ``lamb``: LAMB), its schedule ``transformers.get_scheduler`` with
  ``warmup_ratio`` / ``warmup_steps``, and it logs as Hugging Face's trainer prints with its progress bar:
  ``{'loss': 0.6931, 'learning_rate': 0.0002, 'epoch': 0.05}`` on stdout every ``logging_steps``; checkpoints every
  ``save_steps`` to ``output_dir/checkpoint-N`` (weights, config, ``ipu_config.json``, the feature extractor or
  tokenizer, ``trainer_state.json``, the optimizer's and the schedule's state and the training arguments; where
  Hugging Face's trainer pickles those (``optimizer.pt``, ``scheduler.pt``, ``training_args.bin``), accelkit writes
  ``optimizer.safetensors`` + ``optimizer.json``, ``scheduler.json`` and ``training_args.json``, and never loads a
  pickle: resuming from a real run's checkpoint is refused, naming the file;
  ``save_total_limit`` honoured); ``evaluate`` / ``predict`` with ``compute_metrics``; ``log_metrics`` /
  ``save_metrics`` / ``save_model``. ``train_runtime`` and ``eval_runtime`` are the MODELLED IPU time of the calls,
  not this CPU's.

Text models are placed as optimum-graphcore's pipelined BERT and GPT-2 classes place them (:data:`_LAYOUTS`: the
embeddings on IPU 0, the layers by ``layers_per_ipu``, a classifier / QA head on the last IPU, a head tied to the word
embedding on IPU 0; ``embedding_serialization_factor`` recorded, the layer computed whole); the models keep
transformers' own ``forward`` (optimum-graphcore's MLM head gathers the masked tokens first and GPT-2's rolls its
labels: the same loss). ``optimum.graphcore.utils.check_min_version`` and ``optimum.graphcore.data``'s
``pad_on_batch_axis`` / ``DataCollatorForLanguageModelingWithMaxTokensMasked`` are answered for the examples.

What it does not do is refused with :class:`OptimumGraphcoreError`, naming the API and what to do: other model
architectures (the pipelined classes optimum-graphcore registers for T5, Whisper, RoBERTa...),
``model_init``, custom callbacks, ``push_to_hub``, ``load_best_model_at_end``, ``label_smoothing_factor``,
``compile_only``, ``pipeline(...)``, the seq2seq trainer, and optimum-graphcore's other modules.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch import nn

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log

__version__ = "0.7.1+accelkit"  # the optimum-graphcore release whose signatures this follows


class OptimumGraphcoreError(PopTorchError):
    """An ``optimum.graphcore`` call accelkit does not answer, or answers only in part (named, with the fix)."""


class IncompatibleIPUConfigError(OptimumGraphcoreError, ValueError):
    """``optimum.graphcore.IncompatibleIPUConfigError``: IPU config values that do not fit together or the model."""


def _say(text: str) -> None:
    from accelkit.vendor.notices import say

    say(text)


# ---- IPUConfig ---------------------------------------------------------------------------------------
# optimum-graphcore's IPUConfig.__init__ arguments and their documented defaults (its ipu_configuration.py)
_DEFAULTS: dict[str, Any] = {
    "replication_factor": 1, "inference_replication_factor": 1, "gradient_accumulation_steps": 1,
    "layers_per_ipu": [-1], "inference_layers_per_ipu": None, "ipus_per_replica": None,
    "inference_ipus_per_replica": None, "optimizer_state_offchip": False, "replicated_tensor_sharding": False,
    "matmul_proportion": 0.2, "inference_matmul_proportion": None, "enable_half_partials": True,
    "embedding_serialization_factor": None, "inference_embedding_serialization_factor": None,
    "serialized_embedding_splits_per_ipu": None, "inference_serialized_embedding_splits_per_ipu": None,
    "projection_serialization_factor": None, "inference_projection_serialization_factor": None,
    "serialized_projection_splits_per_ipu": None, "inference_serialized_projection_splits_per_ipu": None,
    "recompute_checkpoint_every_layer": False, "device_iterations": 1, "inference_device_iterations": 1,
    "output_mode": "final", "seed": None, "auto_loss_scaling": False, "executable_cache_dir": "",
    "explicit_ir_inference": False, "parallelize_kwargs": None, "inference_parallelize_kwargs": None,
}
# keys older ipu_config.json files carry that optimum-graphcore accepts and drops (deprecated, or BaseConfig's)
_DROPPED = ("sharded_execution_for_inference", "enable_half_first_order_momentum", "optimum_version",
            "transformers_version", "execute_encoder_on_cpu_for_generation")

# The Hub's IPU configs (each a repository holding only ipu_config.json), answered under --synthetic-data, with
# where each value comes from. Graphcore/vit-base-ipu's own file is not in any public repository this machine
# holds: optimum-graphcore's repository gives a 4-IPU pipeline for its base models (the IPUConfig docstring's
# "on a Pod16, with a 4-IPU pipeline", tests/ipu_config_trainer_test.json: ipus_per_replica 4,
# embedding_serialization_factor 1, recompute_checkpoint_every_layer, optimizer_state_offchip, enable_half_partials,
# replication_factor 1, device_iterations 1) and, for ViT with micro-batch 1 on Graphcore/vit-base-ipu, gradient
# accumulation 16 (examples/image-classification/README.md's beans command); the rest are IPUConfig's defaults.
HUB_CONFIGS: dict[str, tuple[dict[str, Any], str]] = {
    "Graphcore/vit-base-ipu": (
        {"ipus_per_replica": 4, "layers_per_ipu": [-1], "embedding_serialization_factor": 1,
         "recompute_checkpoint_every_layer": True, "optimizer_state_offchip": True, "enable_half_partials": True,
         "replication_factor": 1, "gradient_accumulation_steps": 16, "device_iterations": 1,
         "inference_device_iterations": 1, "matmul_proportion": 0.2, "executable_cache_dir": "./exe_cache"},
        "ipus_per_replica 4, embedding_serialization_factor 1, recompute_checkpoint_every_layer, "
        "optimizer_state_offchip and enable_half_partials from optimum-graphcore's trainer test config "
        "(tests/ipu_config_trainer_test.json), gradient_accumulation_steps 16 from its image-classification README "
        "(ViT, micro-batch 1, Graphcore/vit-base-ipu), layers_per_ipu [-1] (split evenly) and the rest IPUConfig's "
        "documented defaults: the Hub file itself is not available offline"),
    # BERT base: optimum-graphcore's notebooks/external_model.ipynb writes out the BERT-base IPU config it trains
    # with (the Hub file's values): 4 IPUs, layers_per_ipu [0, 4, 4, 4] (IPU 0 holds the embeddings alone, as
    # graphcore/examples' nlp/bert/pytorch configs_pretraining.yml pretrain_base_128 does too), matmul_proportion
    # 0.25 on each IPU, embedding_serialization_factor 2, recompute_checkpoint_every_layer, optimizer_state_offchip,
    # replicated_tensor_sharding, enable_half_partials, device_iterations 1, inference_device_iterations 5 and
    # gradient_accumulation_steps 512 (pre-training's; the examples' READMEs override it for fine-tuning)
    "Graphcore/bert-base-ipu": (
        {"ipus_per_replica": 4, "layers_per_ipu": [0, 4, 4, 4], "matmul_proportion": [0.25, 0.25, 0.25, 0.25],
         "embedding_serialization_factor": 2, "recompute_checkpoint_every_layer": True,
         "optimizer_state_offchip": True, "replicated_tensor_sharding": True, "enable_half_partials": True,
         "device_iterations": 1, "inference_device_iterations": 5, "gradient_accumulation_steps": 512,
         "replication_factor": 1, "executable_cache_dir": "./exe_cache"},
        "ipus_per_replica 4, layers_per_ipu [0, 4, 4, 4], matmul_proportion 0.25 per IPU, "
        "embedding_serialization_factor 2, recompute_checkpoint_every_layer, optimizer_state_offchip, "
        "replicated_tensor_sharding, enable_half_partials, device_iterations 1, inference_device_iterations 5 and "
        "gradient_accumulation_steps 512 from optimum-graphcore's notebooks/external_model.ipynb (BERT base), "
        "layers_per_ipu [0, 4, 4, 4] as in graphcore/examples' BERT configs_pretraining.yml; the rest IPUConfig's "
        "documented defaults: the Hub file itself is not available offline"),
    # GPT-2 small: graphcore/examples' nlp/gpt2/pytorch/benchmarks.yml (pytorch_gpt2_small_train_gen_pod16, the
    # GPT-2 small pipeline optimum-graphcore's config follows): 4 IPUs, layers_per_ipu [0, 4, 4, 4],
    # matmul_proportion 0.15 each, embedding_serialization_factor 4, recompute_checkpoint_every_layer,
    # enable_half_partials, replicated_tensor_sharding; device iterations and gradient accumulation are
    # IPUConfig's defaults (examples/language-modeling/README.md's run_clm.py command passes
    # --gradient_accumulation_steps 128)
    "Graphcore/gpt2-small-ipu": (
        {"ipus_per_replica": 4, "layers_per_ipu": [0, 4, 4, 4], "matmul_proportion": [0.15, 0.15, 0.15, 0.15],
         "embedding_serialization_factor": 4, "recompute_checkpoint_every_layer": True,
         "enable_half_partials": True, "replicated_tensor_sharding": True, "optimizer_state_offchip": True,
         "replication_factor": 1, "executable_cache_dir": "./exe_cache"},
        "ipus_per_replica 4, layers_per_ipu [0, 4, 4, 4], matmul_proportion 0.15 per IPU, "
        "embedding_serialization_factor 4, recompute_checkpoint_every_layer, enable_half_partials and "
        "replicated_tensor_sharding from graphcore/examples' nlp/gpt2/pytorch/benchmarks.yml (GPT-2 small, "
        "pytorch_gpt2_small_train_gen_pod16); the rest IPUConfig's documented defaults: the Hub file itself is not "
        "available offline"),
}


def _validate_at_least(name: str, value: Any, floor: float) -> None:
    if value is None:
        return
    values = value if isinstance(value, (list, tuple)) else [value]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= floor for v in values):
        raise ValueError(f"`IPUConfig` attribute `{name}` must be >= {floor}. You provided value={value!r}")


_FLOORS = {"layers_per_ipu": -1, "inference_layers_per_ipu": -1, "matmul_proportion": 0,
           "inference_matmul_proportion": 0, "replication_factor": 1, "inference_replication_factor": 1,
           "gradient_accumulation_steps": 1, "ipus_per_replica": 1, "inference_ipus_per_replica": 1,
           "embedding_serialization_factor": 1, "inference_embedding_serialization_factor": 1,
           "projection_serialization_factor": 1, "inference_projection_serialization_factor": 1,
           "device_iterations": 1, "inference_device_iterations": 1}


class IPUConfig:
    """``optimum.graphcore.IPUConfig(**fields)``: how the model is placed and run on IPUs (see the module docstring;
    the fields and defaults are optimum-graphcore's). ``train()`` / ``eval()`` switch which of the training and
    ``inference_`` values ``layers_per_ipu``-style reads give, as optimum-graphcore's managed attributes do."""

    CONFIG_NAME = "ipu_config.json"
    FULL_CONFIGURATION_FILE = "ipu_config.json"
    replication_factor: int
    inference_replication_factor: int
    gradient_accumulation_steps: int
    device_iterations: int
    inference_device_iterations: int
    optimizer_state_offchip: bool
    replicated_tensor_sharding: bool
    enable_half_partials: bool
    recompute_checkpoint_every_layer: bool
    output_mode: str
    auto_loss_scaling: bool
    executable_cache_dir: str
    explicit_ir_inference: bool

    def __init__(self, **kwargs: Any) -> None:
        for key in _DROPPED:
            kwargs.pop(key, None)
        unknown = sorted(set(kwargs) - set(_DEFAULTS))
        if unknown:
            raise IncompatibleIPUConfigError(
                "IPUConfig received unknown arguments:\n" + "\n".join(f"  {k}={kwargs[k]!r}" for k in unknown),
                fix="use optimum-graphcore's IPUConfig fields (layers_per_ipu, ipus_per_replica, replication_factor, "
                    "gradient_accumulation_steps, device_iterations, ...)")
        v = {**copy.deepcopy(_DEFAULTS), **kwargs}
        for name, value in v.items():
            if name in _FLOORS:
                _validate_at_least(name, value, _FLOORS[name])
        for name in ("replication_factor", "inference_replication_factor"):
            if not isinstance(v[name], int) or isinstance(v[name], bool):
                raise ValueError(f"{name} must be of type `int`. You provided: {name}={v[name]!r}")
        if v["output_mode"] not in ("all", "sum", "final", "default"):
            raise ValueError(f"`IPUConfig` attribute `output_mode` can only take values in ('all', 'sum', 'final', "
                             f"'default'). You provided: value={v['output_mode']!r}")
        self._mode = "training"
        self.seed = v["seed"]
        self.layers_per_ipu = list(v["layers_per_ipu"])
        self.inference_layers_per_ipu = list(v["inference_layers_per_ipu"] or self.layers_per_ipu)
        self.ipus_per_replica = v["ipus_per_replica"] or len(self.layers_per_ipu)
        fallback = self.ipus_per_replica
        if fallback == len(self.layers_per_ipu) or self.inference_layers_per_ipu != [-1]:
            fallback = len(self.inference_layers_per_ipu)
        self.inference_ipus_per_replica = v["inference_ipus_per_replica"] or fallback
        self.matmul_proportion = v["matmul_proportion"]
        fallback_mp = self.matmul_proportion
        if isinstance(fallback_mp, list) and len(fallback_mp) != self.inference_ipus_per_replica:
            fallback_mp = 0.2
        self.inference_matmul_proportion = v["inference_matmul_proportion"] or fallback_mp
        for name in ("replication_factor", "inference_replication_factor", "gradient_accumulation_steps",
                     "optimizer_state_offchip", "replicated_tensor_sharding", "enable_half_partials",
                     "embedding_serialization_factor", "inference_embedding_serialization_factor",
                     "serialized_embedding_splits_per_ipu", "inference_serialized_embedding_splits_per_ipu",
                     "projection_serialization_factor", "inference_projection_serialization_factor",
                     "serialized_projection_splits_per_ipu", "inference_serialized_projection_splits_per_ipu",
                     "recompute_checkpoint_every_layer", "device_iterations", "inference_device_iterations",
                     "output_mode", "auto_loss_scaling", "executable_cache_dir", "explicit_ir_inference"):
            setattr(self, name, v[name])
        self.parallelize_kwargs = v["parallelize_kwargs"] or {}
        self.inference_parallelize_kwargs = v["inference_parallelize_kwargs"] or {}
        self._validate()

    # training / inference views of the managed attributes
    @property
    def mode(self) -> str:
        return self._mode

    def train(self) -> IPUConfig:
        self._mode = "training"
        return self

    def eval(self) -> IPUConfig:
        self._mode = "inference"
        return self

    def _managed(self, name: str) -> Any:
        return getattr(self, f"inference_{name}" if self._mode == "inference" else name)

    @property
    def _layers_per_ipu(self) -> list[int]:
        return list(self._managed("layers_per_ipu"))

    @property
    def _ipus_per_replica(self) -> int:
        return int(self._managed("ipus_per_replica"))

    @property
    def _matmul_proportion(self) -> float | list[float]:
        return self._managed("matmul_proportion")  # type: ignore[no-any-return]

    def _validate(self) -> None:
        old = self._mode
        try:
            for mode in ("training", "inference"):
                self._mode = mode
                prefix = "" if mode == "training" else "inference_"
                mp = self._matmul_proportion
                if isinstance(mp, list) and len(mp) != self._ipus_per_replica:
                    raise IncompatibleIPUConfigError(
                        f"{prefix}matmul_proportion={mp} should use the same number of IPUs as "
                        f"{prefix}ipus_per_replica={self._ipus_per_replica}.", fix="give one value per IPU")
                lpi = self._layers_per_ipu
                if -1 not in lpi and len(lpi) != self._ipus_per_replica:
                    raise IncompatibleIPUConfigError(
                        f"{prefix}layers_per_ipu={lpi} should use the same number of IPUs as "
                        f"{prefix}ipus_per_replica={self._ipus_per_replica}.", fix="give one count per IPU")
                for layer in ("embedding", "projection"):
                    splits = getattr(self, f"{prefix}serialized_{layer}_splits_per_ipu")
                    factor_name = f"{prefix}{layer}_serialization_factor"
                    if not (splits or getattr(self, factor_name)):
                        setattr(self, factor_name, 1)
                    if splits and getattr(self, factor_name):
                        raise ValueError(f"Only one of `{factor_name}` and `{prefix}serialized_{layer}_splits_per_ipu`"
                                         " should be used at once.")
        finally:
            self._mode = old

    # ---- loading and saving ----------------------------------------------------------------------
    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> IPUConfig:
        return cls(**{**config_dict, **kwargs})

    @classmethod
    def from_json_file(cls, json_file: str | os.PathLike[str]) -> IPUConfig:
        return cls(**json.loads(Path(json_file).read_text()))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike[str], **kwargs: Any) -> IPUConfig:
        """A folder (or file) holding ``ipu_config.json`` is read; a Hub name is a download: under
        ``--synthetic-data`` the configs of :data:`HUB_CONFIGS` are answered (and said), any other is refused.
        Keyword arguments override the loaded values, as in optimum-graphcore."""
        name = os.fspath(pretrained_model_name_or_path)
        for k in ("cache_dir", "force_download", "resume_download", "proxies", "revision", "token",
                  "use_auth_token", "local_files_only", "subfolder", "return_unused_kwargs"):
            kwargs.pop(k, None)
        local = Path(name)
        if local.is_dir() and (local / cls.CONFIG_NAME).is_file():
            return cls.from_dict(json.loads((local / cls.CONFIG_NAME).read_text()), **kwargs)
        if local.is_file():
            return cls.from_dict(json.loads(local.read_text()), **kwargs)
        from accelkit.vendor import synthetic

        if name in HUB_CONFIGS and synthetic.active():
            values, source = HUB_CONFIGS[name]
            _say(f"IPUConfig.from_pretrained({name!r}) is made here from optimum-graphcore's public values: {source}; "
                 "nothing downloaded")
            return cls.from_dict(copy.deepcopy(values), **kwargs)
        known = ", ".join(HUB_CONFIGS)
        raise OptimumGraphcoreError(
            f"IPUConfig.from_pretrained({name!r}) downloads the IPU config from the Hugging Face Hub, which this run "
            "cannot reach" + ("" if name in HUB_CONFIGS else f" (accelkit answers only {known})"),
            fix=("run with --synthetic-data (accelkit vendor-run --synthetic-data ...), which answers "
                 f"{known} offline, or " if name in HUB_CONFIGS else "") +
                "save the config's ipu_config.json in a folder and pass that folder, or build IPUConfig(...) in the "
                "script")

    def to_dict(self) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if not k.startswith("_")}

    def to_json_string(self, use_diff: bool = True) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file_path: str | os.PathLike[str], use_diff: bool = True) -> None:
        Path(json_file_path).write_text(self.to_json_string())

    def save_pretrained(self, save_directory: str | os.PathLike[str], push_to_hub: bool = False, **_: Any) -> None:
        if push_to_hub:
            _refuse("IPUConfig.save_pretrained(push_to_hub=True)", "uploads to the Hugging Face Hub",
                    "save it locally (push_to_hub=False)")
        Path(save_directory).mkdir(parents=True, exist_ok=True)
        self.to_json_file(Path(save_directory) / self.CONFIG_NAME)

    def __repr__(self) -> str:
        return f"IPUConfig {self.to_json_string()}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IPUConfig) and self.to_dict() == other.to_dict()

    def update_from_string(self, update_str: str) -> None:
        """``"gradient_accumulation_steps=64,matmul_proportion=[0.1 0.2]"``: set existing fields, typed as they are."""
        for item in update_str.split(","):
            k, _, val = item.partition("=")
            if not hasattr(self, k):
                raise ValueError(f"Key {k} isn't in the original config dict")
            old = getattr(self, k)
            new: Any
            if isinstance(old, bool):
                if val.lower() not in ("true", "1", "y", "yes", "false", "0", "n", "no"):
                    raise ValueError(f"Can't derive true or false from {val} (key {k})")
                new = val.lower() in ("true", "1", "y", "yes")
            elif isinstance(old, int):
                new = int(val)
            elif isinstance(old, float):
                new = float(val)
            elif isinstance(old, list):
                new = json.loads(val.replace(" ", ","))
            else:
                new = val
            if k in _FLOORS:
                _validate_at_least(k, new, _FLOORS[k])
            setattr(self, k, new)
        self._validate()

    def batch_size_factor(self, for_inference: bool = False) -> int:
        """Replicas x gradient accumulation (training) x device iterations: the combined batch over the micro-batch."""
        if for_inference:
            return int(self.inference_replication_factor * self.inference_device_iterations)
        return int(self.replication_factor * self.gradient_accumulation_steps * self.device_iterations)

    def to_options(self, for_inference: bool = False, compile_only: bool = False) -> Any:
        """The ``poptorch.Options`` optimum-graphcore builds from this config (accelkit's PopTorch facade's)."""
        import accelkit.facades.poptorch as poptorch

        if compile_only:
            _refuse("IPUConfig.to_options(compile_only=True)", "compiles offline for an IPU target without running",
                    "leave compile_only False: accelkit compiles and runs the simulated IPUs in one go")
        old = self._mode
        self.eval() if for_inference else self.train()
        try:
            opts = poptorch.Options()
            opts.autoRoundNumIPUs(True)
            opts.replicationFactor(self.inference_replication_factor if for_inference else self.replication_factor)
            opts.deviceIterations(self.inference_device_iterations if for_inference else self.device_iterations)
            if not for_inference:
                opts.Training.gradientAccumulation(self.gradient_accumulation_steps)
                opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
                if self.auto_loss_scaling:
                    opts.Training.setAutomaticLossScaling(True)
            modes = {"all": poptorch.OutputMode.All, "sum": poptorch.OutputMode.Sum,
                     "final": poptorch.OutputMode.Final, "default": poptorch.OutputMode.Default}
            opts.outputMode(poptorch.OutputMode.All if for_inference else modes[self.output_mode])
            if self.seed:
                opts.randomSeed(self.seed)
            opts.TensorLocations.setOptimizerLocation(
                poptorch.TensorLocationSettings().useOnChipStorage(not self.optimizer_state_offchip)
                .useReplicatedTensorSharding(bool(self.replicated_tensor_sharding)
                                             and opts.replication_factor > 1))
            strategy = poptorch.ShardedExecution if for_inference else poptorch.PipelinedExecution
            opts.setExecutionStrategy(strategy(poptorch.AutoStage.AutoIncrement))
            mp = self._matmul_proportion
            per_ipu = mp if isinstance(mp, list) else [mp] * self._ipus_per_replica
            opts.setAvailableMemoryProportion({f"IPU{i}": per_ipu[i] for i in range(self._ipus_per_replica)})
            if self.executable_cache_dir and self.executable_cache_dir != "disabled":
                opts.enableExecutableCaching(self.executable_cache_dir)
            opts.Precision.enableStochasticRounding(not for_inference)
            if self.enable_half_partials:
                opts.Precision.setPartialsType(torch.float16)
            opts._Popart.set("disableGradAccumulationTensorStreams", True)
            opts._Popart.set("outlineThreshold", 10.0)
            opts._Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
            opts._Popart.setPatterns({"TiedGather": True, "TiedGatherAccumulate": True,
                                      "UpdateInplacePrioritiesForIpu": True})
            return opts
        finally:
            self._mode = old


def _refuse(api: str, what: str, fix: str) -> NoReturn:
    raise OptimumGraphcoreError(f"optimum.graphcore's {api} {what}: accelkit does not simulate it", fix=fix)


# ---- placing the model on the IPUs -------------------------------------------------------------------------------
def _expand_layers_per_ipu(ipu_config: IPUConfig, n_layers: int) -> list[int]:
    """``layers_per_ipu`` with its wildcards (-1) expanded for ``n_layers`` layers, as optimum-graphcore does (an
    even split, the remainder on the last wildcard IPU; one IPU takes every layer)."""
    lpi, ipus = ipu_config._layers_per_ipu, ipu_config._ipus_per_replica
    name = "layers_per_ipu" if ipu_config.mode == "training" else "inference_layers_per_ipu"
    if ipus == 1:
        return [n_layers]
    if lpi in ([-1], [-1] * ipus):
        q, r = divmod(n_layers, ipus)
        return [q] * (ipus - 1) + [q + r]
    if -1 in lpi and len(lpi) == ipus:
        wild = [i for i, x in enumerate(lpi) if x == -1]
        q, r = divmod(n_layers - sum(x for x in lpi if x != -1), len(wild))
        out = [q if x == -1 else x for x in lpi]
        out[wild[-1]] += r
        return out
    if len(lpi) != ipus:
        raise IncompatibleIPUConfigError(f"{name}={lpi} has a non-default value set, but its length does not match "
                                         f"ipus_per_replica={ipus}", fix="give one count per IPU")
    if sum(lpi) != n_layers:
        raise IncompatibleIPUConfigError(
            f"{name} does not define the correct number of layers for the current model. The current IPU Config "
            f"specifies IPU assignments for {sum(lpi)} layers but there are {n_layers} layers in the model. "
            f"{name}={lpi}", fix=f"give counts that add up to {n_layers}, or use -1 (split evenly)")
    return list(lpi)


@dataclass(frozen=True)
class _Layout:
    """How one of optimum-graphcore's pipelined classes places the transformers model it replaces (its
    ``parallelize``): the embeddings on IPU 0, the layers by ``layers_per_ipu``, the heads on the last IPU or (tied
    to the word embedding) on IPU 0."""

    pipelined: str                               # optimum-graphcore's class
    base: str                                    # the base model's attribute ("bert", "transformer", "vit")
    embeddings: tuple[tuple[str, str, str], ...]  # (attribute on the base, block name, placement line) on IPU 0
    layers: tuple[str, ...]                      # where the layer list is on the base (transformers 4, 5)
    layer_name: tuple[str, str]                  # (block name, placement line) per layer: "Encoder", "Layer"
    heads: tuple[tuple[str, str, str, bool], ...]  # (path from the model, block name, placement line, on IPU 0)
    checkpoint_last: bool                        # recompute_checkpoint_every_layer also after the last layer
    serialized: str                              # "embedding": SerializedEmbedding of the word embedding;
    #                                              "projection": the tied head as SerializedLinear; "" neither


_BERT_EMB = (("embeddings", "Embedding", "Embedding  --> IPU 0"),)
_GPT2_EMB = (("wte", "Token embedding", "Token Embedding     --> IPU 0"),
             ("wpe", "Position embedding", "Position Embedding  --> IPU 0"))
_BERT_LAYERS = ("encoder.layer", "layers")
# optimum-graphcore's models/vit, models/bert and models/gpt2 modeling files, class by class
_LAYOUTS: dict[str, _Layout] = {
    **{name: _Layout(f"Pipelined{name}", "vit", (("embeddings", "Embedding", "Embedding  --> IPU 0"),),
                     _BERT_LAYERS, ("Encoder", "Encoder"),
                     (("vit.layernorm", "LayerNorm", "Head       --> IPU {last}", False),
                      ("classifier", "Classifier", "", False)), True, "")
       for name in ("ViTForImageClassification", "DeiTForImageClassification")},
    **{name: _Layout(f"Pipelined{name}", "bert", _BERT_EMB, _BERT_LAYERS, ("Encoder", "Encoder"),
                     ((head, block, f"{line} --> IPU {{last}}", False),), False, "embedding")
       for name, head, block, line in (
           ("BertForSequenceClassification", "classifier", "Classifier Output", "Classifier Output"),
           ("BertForTokenClassification", "classifier", "Classifier Output", "Classifier Output"),
           ("BertForMultipleChoice", "classifier", "Classifier Output", "Classifier Output"),
           ("BertForQuestionAnswering", "qa_outputs", "QA Outputs", "QA Outputs"))},
    "BertForMaskedLM": _Layout("PipelinedBertForMaskedLM", "bert", _BERT_EMB, _BERT_LAYERS, ("Encoder", "Encoder"),
                               (("cls", "Classifier", "Classifier --> IPU 0", True),), True, "projection"),
    "BertForPreTraining": _Layout("PipelinedBertForPreTraining", "bert", _BERT_EMB, _BERT_LAYERS,
                                  ("Encoder", "Encoder"),
                                  (("bert.pooler", "Pooler", "Pooler --> IPU 0", True),
                                   ("cls", "Classifier", "Classifier --> IPU 0", True)), True, "projection"),
    "GPT2LMHeadModel": _Layout("PipelinedGPT2LMHeadModel", "transformer", _GPT2_EMB, ("h",), ("Layer", "Layer"),
                               (("lm_head", "LM head", "Head                --> IPU 0", True),), True, "projection"),
    **{name: _Layout(f"Pipelined{name}", "transformer", _GPT2_EMB, ("h",), ("Layer", "Layer"),
                     ((head, block, "Head       --> IPU {last}", False),), False, "embedding")
       for name, head, block in (("GPT2ForSequenceClassification", "score", "Score"),
                                 ("GPT2ForTokenClassification", "classifier", "Classifier"))},
}


def _find(root: Any, path: str) -> Any:
    for part in path.split("."):
        root = getattr(root, part, None)
    return root


def _set(root: Any, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        root = getattr(root, part)
    setattr(root, last, value)


def _stand_in_split(ipu_config: IPUConfig, n_layers: int) -> list[int] | None:
    """Under --synthetic-data, a checkpoint's stand-in has fewer layers than the real model its IPU config counts
    (``layers_per_ipu=[0, 4, 4, 4]`` for BERT base's 12): each stand-in layer goes to the IPU that holds the same
    fraction of the real model's depth, so the embeddings-only IPU stays so and the head's IPU keeps layers."""
    from accelkit.vendor import synthetic

    lpi = ipu_config._layers_per_ipu
    if not synthetic.active() or -1 in lpi or sum(lpi) <= n_layers or len(lpi) != ipu_config._ipus_per_replica:
        return None
    bounds = [sum(lpi[:i + 1]) for i in range(len(lpi))]
    out = [0] * len(lpi)
    for i in range(n_layers):
        position = (i + 0.5) * sum(lpi) / n_layers
        out[next(ipu for ipu, b in enumerate(bounds) if position < b)] += 1
    _say(f"layers_per_ipu={lpi} places {sum(lpi)} layers, the real checkpoint's; its --synthetic-data stand-in has "
         f"{n_layers}, placed where the same fractions of the real model's depth sit: {out}")
    return out


def _parallelize(model: nn.Module, ipu_config: IPUConfig) -> list[str]:
    """Place ``model``'s parts on the IPUs with ``poptorch.BeginBlock``, as optimum-graphcore's pipelined class for
    its architecture does (:data:`_LAYOUTS`); returns the placement, one line per part (optimum-graphcore logs it
    so), with the serialized word embedding or projection the IPU config asks for recorded."""
    import accelkit.facades.poptorch as poptorch

    layout = _LAYOUTS.get(type(model).__name__)
    base: Any = getattr(model, layout.base, None) if layout is not None else None
    layers: Any = None
    for path in layout.layers if layout is not None else ():
        layers = layers if isinstance(layers, nn.ModuleList) else _find(base, path)
    if layout is None or base is None or not isinstance(layers, nn.ModuleList):
        _refuse(f"IPUTrainer on a {type(model).__name__}",
                "pipelines the model with a class of its own for that architecture (PipelinedT5..., "
                "PipelinedWhisper..., PipelinedRoberta...)",
                "accelkit's IPUTrainer places " + ", ".join(sorted(_LAYOUTS)) + "; for another model write the "
                "PopTorch loop: poptorch.BeginBlock on its layers, poptorch.trainingModel(model, "
                "ipu_config.to_options(), optimizer) (examples/vendor/poptorch_bert.py has that shape)")
    placement: list[str] = []
    for attr, block, line in layout.embeddings:
        setattr(base, attr, poptorch.BeginBlock(getattr(base, attr), block, ipu_id=0))
        placement.append(line)
    try:
        per_ipu = _expand_layers_per_ipu(ipu_config, len(layers))
    except IncompatibleIPUConfigError:
        split = _stand_in_split(ipu_config, len(layers))
        if split is None:
            raise
        per_ipu = split
    layer_ipu = [ipu for ipu, n in enumerate(per_ipu) for _ in range(n)]
    hooks = getattr(model, "_accelkit_hooks", [])
    for index, layer in enumerate(layers):
        if ipu_config.recompute_checkpoint_every_layer and (layout.checkpoint_last or index != len(layers) - 1):
            hooks.append(layer.register_forward_hook(_recompute_outputs))
        name, line = layout.layer_name
        placement.append(f"{line} {index:<2} --> IPU {layer_ipu[index]}")
        layers[index] = poptorch.BeginBlock(layer, f"{name}{index}", ipu_id=layer_ipu[index])
    last = ipu_config._ipus_per_replica - 1
    for path, block, line, first in layout.heads:
        _set(model, path, poptorch.BeginBlock(_find(model, path), block, ipu_id=0 if first else last))
        if line:
            placement.append(line.format(last=last))
    placement.extend(_serialization(model, layout, ipu_config))
    vars(model)["_accelkit_hooks"] = hooks
    return placement


def _serialization(model: nn.Module, layout: _Layout, ipu_config: IPUConfig) -> list[str]:
    """What optimum-graphcore serializes for ``embedding_serialization_factor`` > 1 (or
    ``serialized_embedding_splits_per_ipu``): the word embedding as a ``SerializedEmbedding`` (its rows looked up in
    that many slices) or the tied head as a ``SerializedLinear`` (the vocabulary projection in that many matmuls,
    GPT-2's vocabulary padded up to a multiple with logits held at -10000). The values are the same; accelkit
    records it, and computes the layer whole."""
    prefix = "" if ipu_config.mode == "training" else "inference_"
    factor = getattr(ipu_config, f"{prefix}embedding_serialization_factor", None) or 1
    splits = getattr(ipu_config, f"{prefix}serialized_embedding_splits_per_ipu", None)
    if splits:
        factor = sum(splits)
    if factor <= 1 or not layout.serialized:
        return []
    what = ("word embedding as SerializedEmbedding" if layout.serialized == "embedding"
            else "tied vocabulary projection as SerializedLinear")
    where = f", splits per IPU {splits}" if splits else ""
    return [f"Serialized: {what} in {factor} slices{where} (same values; accelkit computes it whole)"]


def _recompute_outputs(_module: nn.Module, _inputs: Any, outputs: Any) -> Any:
    from accelkit.facades.poptorch import recomputationCheckpoint

    if isinstance(outputs, torch.Tensor):
        return recomputationCheckpoint(outputs)
    if isinstance(outputs, tuple):
        return tuple(recomputationCheckpoint(y) if isinstance(y, torch.Tensor) else y for y in outputs)
    return None


# ---- IPUTrainingArguments ----------------------------------------------------------------------------------------
@dataclass
class IPUTrainingArguments:
    """``optimum.graphcore.IPUTrainingArguments``: transformers' ``TrainingArguments`` (the fields Graphcore's
    tutorials and optimum-graphcore's trainer read, with their defaults) and the IPU's own (``n_ipu``, ``fp32``,
    ``lamb``, ``loss_scaling``, ``dataloader_mode``, ``ipu_config_overrides``...). ``gradient_accumulation_steps``
    given here overrides the IPU config's, as optimum-graphcore does."""

    output_dir: str
    overwrite_output_dir: bool = False
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    evaluation_strategy: str = "no"
    prediction_loss_only: bool = False
    per_device_train_batch_size: int = 1
    per_device_eval_batch_size: int = 1
    gradient_accumulation_steps: int | None = None
    eval_delay: float | None = 0
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    num_train_epochs: float = 3.0
    max_steps: int = -1
    lr_scheduler_type: str = "linear"
    warmup_ratio: float = 0.0
    warmup_steps: int = 0
    log_level: str | None = "passive"
    logging_dir: str | None = None
    logging_strategy: str = "steps"
    logging_first_step: bool = False
    logging_steps: int = 500
    logging_nan_inf_filter: bool = False
    save_strategy: str = "steps"
    save_steps: int = 500
    save_total_limit: int | None = None
    seed: int = 42
    data_seed: int | None = None
    debug: str = ""
    dataloader_drop_last: bool = False
    eval_steps: int | None = None
    dataloader_num_workers: int = 0
    past_index: int = -1
    run_name: str | None = None
    disable_tqdm: bool | None = None
    remove_unused_columns: bool | None = True
    label_names: list[str] | None = None
    load_best_model_at_end: bool | None = False
    metric_for_best_model: str | None = None
    greater_is_better: bool | None = None
    ignore_data_skip: bool = False
    label_smoothing_factor: float = 0.0
    group_by_length: bool = False
    length_column_name: str | None = "length"
    report_to: Any = None
    dataloader_pin_memory: bool = True
    skip_memory_metrics: bool = True
    push_to_hub: bool = False
    resume_from_checkpoint: str | None = None
    hub_model_id: str | None = None
    hub_strategy: str = "every_save"
    hub_token: str | None = None
    hub_private_repo: bool = False
    gradient_checkpointing: bool = False
    include_inputs_for_metrics: bool = False
    push_to_hub_model_id: str | None = None
    push_to_hub_organization: str | None = None
    push_to_hub_token: str | None = None
    ipu_config_name: str | None = None
    n_ipu: int | None = None
    fp32: bool = False
    lamb: bool = False
    lamb_no_bias_correction: bool = False
    loss_scaling: float | None = None
    auto_loss_scaling: bool = False
    dataloader_mode: str = "sync"
    compile_only: bool = False
    ipu_config_overrides: str | None = None
    pad_on_batch_axis: bool = False
    eval_strategy: str | None = None  # transformers' later name for evaluation_strategy
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.eval_strategy is not None:
            self.evaluation_strategy = self.eval_strategy
        for name in ("evaluation_strategy", "logging_strategy", "save_strategy"):
            value = str(getattr(self, name)).split(".")[-1].lower()
            if value not in ("no", "steps", "epoch"):
                raise ValueError(f"{name} must be 'no', 'steps' or 'epoch', not {getattr(self, name)!r}")
            setattr(self, name, value)
        if self.evaluation_strategy == "steps" and not (self.eval_steps or self.logging_steps):
            raise ValueError("evaluation strategy steps requires either eval_steps or logging_steps")
        if self.eval_steps is None and self.evaluation_strategy == "steps":
            self.eval_steps = self.logging_steps
        if self.logging_dir is None:
            self.logging_dir = os.path.join(self.output_dir, "runs")
        if self.disable_tqdm is None:
            self.disable_tqdm = False
        if self.run_name is None:
            self.run_name = self.output_dir
        if not 0 <= self.warmup_ratio <= 1:
            raise ValueError("warmup_ratio must lie in range [0,1]")
        if self.dataloader_mode not in ("sync", "async", "async_rebatched"):
            raise ValueError(f"dataloader_mode must be 'sync', 'async' or 'async_rebatched', not {self.dataloader_mode!r}")
        overrides = []
        if self.gradient_accumulation_steps is not None:
            overrides.append(f"gradient_accumulation_steps={self.gradient_accumulation_steps}")
        else:
            self.gradient_accumulation_steps = 1
        if self.auto_loss_scaling:
            overrides.append(f"auto_loss_scaling={self.auto_loss_scaling}")
        if self.gradient_checkpointing:
            overrides.append("recompute_checkpoint_every_layer=True")
        if overrides:
            joined = ",".join(overrides)
            self.ipu_config_overrides = joined if self.ipu_config_overrides is None else \
                f"{self.ipu_config_overrides},{joined}"
        for name, what, fix in (
                ("push_to_hub", "uploads the model to the Hugging Face Hub", "leave push_to_hub False"),
                ("load_best_model_at_end", "reloads the best checkpoint at the end of training",
                 "leave it False and load the checkpoint you want with from_pretrained"),
                ("compile_only", "compiles offline without running", "leave compile_only False"),
                ("group_by_length", "samples batches of similar lengths (text)", "leave group_by_length False")):
            if getattr(self, name):
                _refuse(f"IPUTrainingArguments({name}=True)", what, fix)
        if self.label_smoothing_factor:
            _refuse("IPUTrainingArguments(label_smoothing_factor=...)", "smooths the labels in the loss",
                    "leave it 0, or smooth the labels where the batch is made")

    @property
    def train_batch_size(self) -> int:
        return self.per_device_train_batch_size

    @property
    def eval_batch_size(self) -> int:
        return self.per_device_eval_batch_size

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def should_log(self) -> bool:
        return True

    @property
    def should_save(self) -> bool:
        return True

    @property
    def local_rank(self) -> int:
        return -1

    @property
    def process_index(self) -> int:
        return 0

    @property
    def world_size(self) -> int:
        return 1

    @property
    def n_gpu(self) -> int:
        return 0

    @property
    def parallel_mode(self) -> str:
        return "not_parallel"

    def main_process_first(self, local: bool = True, desc: str = "work") -> Any:
        """One process here: the block runs at once (as transformers' context manager does without replicas)."""
        import contextlib

        return contextlib.nullcontext()

    def get_warmup_steps(self, num_training_steps: int) -> int:
        return self.warmup_steps if self.warmup_steps > 0 else math.ceil(num_training_steps * self.warmup_ratio)

    def get_process_log_level(self) -> int:
        import logging

        return logging.WARNING

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# ---- IPUTrainer ---------------------------------------------------------------------------------------------------
def _print_logs(logs: dict[str, Any]) -> None:
    """Hugging Face's progress bar writes each log so: ``str(logs)`` on its own line of stdout."""
    print(str(logs), flush=True)


class IPUTrainer:
    """``optimum.graphcore.IPUTrainer(model, ipu_config, args, data_collator, eval_data_collator, train_dataset,
    eval_dataset, tokenizer, model_init, compute_metrics, callbacks, optimizers, preprocess_logits_for_metrics,
    force_to_pipelined)``: see the module docstring."""

    def __init__(self, model: nn.Module | None = None, ipu_config: IPUConfig | None = None,
                 args: IPUTrainingArguments | None = None, data_collator: Callable[..., Any] | None = None,
                 eval_data_collator: Callable[..., Any] | None = None, train_dataset: Any = None,
                 eval_dataset: Any = None, tokenizer: Any = None, model_init: Callable[..., Any] | None = None,
                 compute_metrics: Callable[[Any], dict[str, Any]] | None = None,
                 callbacks: Sequence[Any] | None = None,
                 optimizers: tuple[Any, Any] = (None, None),
                 preprocess_logits_for_metrics: Callable[..., Any] | None = None,
                 force_to_pipelined: bool = False) -> None:
        from transformers import set_seed

        if args is None:
            args = IPUTrainingArguments(output_dir="tmp_trainer")
        self.args = args
        set_seed(args.seed)
        if model is None:
            raise RuntimeError("`IPUTrainer` requires either a `model` or `model_init` argument")
        if model_init is not None:
            _refuse("IPUTrainer(model_init=...)", "builds a new model for each run (hyper-parameter search)",
                    "pass the model itself (model=...)")
        if callbacks:
            _refuse("IPUTrainer(callbacks=[...])", "calls your TrainerCallbacks during training",
                    "leave callbacks out: the trainer logs every logging_steps and saves every save_steps")
        if ipu_config is None:
            raise OptimumGraphcoreError("IPUTrainer needs an ipu_config",
                                        fix="ipu_config=IPUConfig.from_pretrained('Graphcore/<model>-ipu') or IPUConfig(...)")
        self.ipu_config = copy.deepcopy(ipu_config)
        if args.n_ipu is not None:
            self.ipu_config.replication_factor = args.n_ipu // self.ipu_config.ipus_per_replica
            self.ipu_config.inference_replication_factor = args.n_ipu // self.ipu_config.inference_ipus_per_replica
        if args.ipu_config_overrides:
            self.ipu_config.update_from_string(args.ipu_config_overrides)
        self.ipu_config.seed = args.seed
        self.opts = self.ipu_config.to_options()
        self.eval_opts = self.ipu_config.to_options(for_inference=True)
        if args.dataloader_num_workers:
            facade_log.accept("optimum.graphcore", f"IPUTrainingArguments(dataloader_num_workers="
                              f"{args.dataloader_num_workers})",
                              "worker processes that prepare the batches in parallel for the IPUs' host; this CPU "
                              "prepares the same batches in its own process")
        from transformers import default_data_collator

        self.data_collator = data_collator if data_collator is not None else default_data_collator
        self.eval_data_collator = eval_data_collator if eval_data_collator is not None else self.data_collator
        if args.pad_on_batch_axis:  # each batch padded to the compiled size by repeating its samples, as optimum does
            if args.do_train:
                self.data_collator = pad_on_batch_axis(
                    args.per_device_train_batch_size * self.ipu_config.batch_size_factor())(self.data_collator)
            if args.do_eval:
                self.eval_data_collator = pad_on_batch_axis(
                    args.per_device_eval_batch_size * self.ipu_config.batch_size_factor(True))(self.eval_data_collator)
        self.train_dataset, self.eval_dataset, self.tokenizer = train_dataset, eval_dataset, tokenizer
        self.original_model = model
        self.model = model
        self.placement = _parallelize(model, self.ipu_config.train())
        if not args.fp32:
            self.model = self.model.half()
        self.compute_metrics = compute_metrics
        self.preprocess_logits_for_metrics = preprocess_logits_for_metrics
        self.optimizer, self.lr_scheduler = optimizers
        self.training_model: Any = None
        self.inference_model: Any = None
        self.state = _State()
        self.control = _Control()
        self.callback_handler = _CallbackHandler(self.control)
        self.is_in_train = False
        self._modelled_s = 0.0

    # ---- optimizer and schedule --------------------------------------------------------------------
    def create_optimizer(self) -> Any:
        import accelkit.facades.poptorch as poptorch

        if self.optimizer is None:
            norms = {f"{n}.{p}" if n else p for n, m in self.model.named_modules()
                     if isinstance(m, nn.LayerNorm) for p, _ in m.named_parameters(recurse=False)}
            decay = {n for n, _ in self.model.named_parameters() if n not in norms and "bias" not in n}
            params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
            first_order = torch.float32 if self.args.fp32 else torch.float16
            kwargs: dict[str, Any] = {"lr": self.args.learning_rate, "loss_scaling": self.args.loss_scaling,
                                      "accum_type": first_order, "first_order_momentum_accum_type": first_order,
                                      "second_order_momentum_accum_type": torch.float32, "eps": self.args.adam_epsilon}
            groups = [{"params": [p for n, p in params if n in decay], "weight_decay": self.args.weight_decay},
                      {"params": [p for n, p in params if n not in decay], "weight_decay": 0.0}]
            if self.args.lamb or self.args.lamb_no_bias_correction:
                lamb = getattr(poptorch.optim, "LAMB", None)
                if lamb is None:
                    _refuse("IPUTrainingArguments(lamb=True)", "trains with PopTorch's LAMB",
                            "leave lamb False (AdamW)")
                self.optimizer = lamb(groups, bias_correction=not self.args.lamb_no_bias_correction, **kwargs)
            else:
                self.optimizer = poptorch.optim.AdamW(groups, betas=(self.args.adam_beta1, self.args.adam_beta2),
                                                      bias_correction=False, **kwargs)
        return self.optimizer

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        from transformers import get_scheduler

        if self.lr_scheduler is None:
            self.lr_scheduler = get_scheduler(self.args.lr_scheduler_type, optimizer=optimizer or self.optimizer,
                                              num_warmup_steps=self.args.get_warmup_steps(num_training_steps),
                                              num_training_steps=num_training_steps)
        return self.lr_scheduler

    def create_optimizer_and_scheduler(self, num_training_steps: int) -> None:
        self.create_optimizer()
        self.create_scheduler(num_training_steps)

    # ---- data ---------------------------------------------------------------------------------------
    def _loader(self, dataset: Any, training: bool) -> Any:
        import accelkit.facades.poptorch as poptorch

        if dataset is None:
            raise ValueError(f"Trainer: {'training requires a train_dataset' if training else 'evaluation requires an eval_dataset'}.")
        if self.args.remove_unused_columns and hasattr(dataset, "column_names"):
            import inspect

            wanted = set(inspect.signature(self.model.forward).parameters) | {"label", "label_ids", "labels"}
            unused = [c for c in dataset.column_names if c not in wanted]
            if unused and hasattr(dataset, "remove_columns"):
                dataset = dataset.remove_columns(unused)
        generator = torch.Generator()
        generator.manual_seed(self.args.data_seed if self.args.data_seed is not None else self.args.seed)
        opts = self.opts if training else self.eval_opts
        batch = self.args.per_device_train_batch_size if training else self.args.per_device_eval_batch_size
        # every batch the combined size (a compiled program has fixed shapes): PopTorch's loader drops the rest,
        # unless pad_on_batch_axis pads the last batch of the evaluation up to that size
        drop_last = training or not self.args.pad_on_batch_axis
        return poptorch.DataLoader(opts, dataset, batch_size=batch, shuffle=training, drop_last=drop_last,
                                   collate_fn=self.data_collator if training else self.eval_data_collator,
                                   generator=generator)

    def get_train_dataloader(self) -> Any:
        return self._loader(self.train_dataset, True)

    def get_eval_dataloader(self, eval_dataset: Any = None) -> Any:
        return self._loader(eval_dataset if eval_dataset is not None else self.eval_dataset, False)

    def get_test_dataloader(self, test_dataset: Any) -> Any:
        return self._loader(test_dataset, False)

    # ---- compiled models ----------------------------------------------------------------------------
    def wrap_model(self, model: nn.Module, training: bool = True) -> Any:
        import accelkit.facades.poptorch as poptorch

        _plain_model_outputs(model)
        if training:
            if self.training_model is None:
                self.ipu_config.train()
                self.create_optimizer()
                self.training_model = poptorch.trainingModel(model.train(), options=self.opts,
                                                             optimizer=self.optimizer)
            return self.training_model
        if self.inference_model is None:
            self.ipu_config.eval()
            self.inference_model = poptorch.inferenceModel(model.eval(), options=self.eval_opts)
        return self.inference_model

    def _modelled(self) -> float:
        return sum(float(getattr(m, "simulated_time_s", 0.0) or 0.0)
                   for m in (self.training_model, self.inference_model) if m is not None)

    # ---- training -------------------------------------------------------------------------------------
    def _prepare_inputs(self, inputs: Any) -> dict[str, Any]:
        if not isinstance(inputs, dict):
            raise OptimumGraphcoreError(f"the data collator returned {type(inputs).__name__}, not a dict of tensors",
                                        fix="return {'pixel_values': ..., 'labels': ...} from the data collator")
        out = {}
        half = not self.args.fp32
        for k, v in inputs.items():
            # PopTorch takes no float64 (it casts to float32); a half model's float inputs are cast to half,
            # as the tutorials' transforms do for the images
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                v = v.half() if half else v.float()
            out[k] = v
        return out

    def _loss(self, outputs: Any) -> torch.Tensor:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs[0]
        if loss is None:
            raise ValueError("The model did not return a loss from the inputs: give the batch its labels")
        return loss  # type: ignore[no-any-return]

    def train(self, resume_from_checkpoint: str | bool | None = None, trial: Any = None,
              ignore_keys_for_eval: list[str] | None = None, **kwargs: Any) -> Any:
        """Train for ``num_train_epochs`` (or ``max_steps``) steps of the combined batch; see the module docstring."""
        from transformers.trainer_utils import TrainOutput, get_last_checkpoint

        if trial is not None:
            _refuse("IPUTrainer.train(trial=...)", "runs a hyper-parameter search trial", "call train() without it")
        self.is_in_train = True
        args = self.args
        if resume_from_checkpoint is True:
            resume_from_checkpoint = get_last_checkpoint(args.output_dir)
            if resume_from_checkpoint is None:
                raise ValueError(f"No valid checkpoint found in output directory ({args.output_dir})")
        loader = self.get_train_dataloader()
        steps_per_epoch = len(loader)
        if steps_per_epoch == 0:
            raise OptimumGraphcoreError(
                f"the training set ({len(self.train_dataset)} samples) is smaller than one combined batch "
                f"({args.per_device_train_batch_size} x {self.ipu_config.batch_size_factor()} = micro-batch x "
                "replication_factor x gradient_accumulation_steps x device_iterations)",
                fix="use a larger training set or a smaller gradient_accumulation_steps (ipu_config_overrides)")
        max_steps = args.max_steps if args.max_steps > 0 else math.ceil(args.num_train_epochs * steps_per_epoch)
        epochs = math.ceil(max_steps / steps_per_epoch)
        model = self.wrap_model(self.model)
        self.create_scheduler(max_steps)
        self.state = _State(max_steps=max_steps, num_train_epochs=epochs, logging_steps=args.logging_steps,
                            save_steps=args.save_steps, train_batch_size=args.per_device_train_batch_size)
        start_epoch = 0
        if resume_from_checkpoint:
            self._load_checkpoint(str(resume_from_checkpoint))
            start_epoch = self.state.global_step // steps_per_epoch
        tr_loss, logged_loss, last_logged = 0.0, 0.0, self.state.global_step
        modelled0 = self._modelled()
        for epoch in range(start_epoch, epochs):
            for step, inputs in enumerate(loader):
                if self.state.global_step >= max_steps:
                    break
                outputs = model(**self._prepare_inputs(inputs))
                loss = float(self._loss(outputs).float().mean())
                if args.logging_nan_inf_filter and not math.isfinite(loss):
                    loss = tr_loss / max(1, self.state.global_step - last_logged)
                tr_loss += loss
                self.lr_scheduler.step()
                model.setOptimizer(self.optimizer)  # the new learning rate reaches the IPU, as optimum does
                self.state.global_step += 1
                self.state.epoch = epoch + (step + 1) / steps_per_epoch
                gs = self.state.global_step
                if (args.logging_strategy == "steps" and args.logging_steps > 0 and gs % args.logging_steps == 0) \
                        or (args.logging_first_step and gs == 1):
                    logs = {"loss": round((tr_loss - logged_loss) / (gs - last_logged), 4),
                            "learning_rate": self._learning_rate()}
                    logged_loss, last_logged = tr_loss, gs
                    self.log(logs)
                if args.evaluation_strategy == "steps" and args.eval_steps and gs % args.eval_steps == 0:
                    self.evaluate()
                if args.save_strategy == "steps" and args.save_steps > 0 and gs % args.save_steps == 0:
                    self._save_checkpoint()
            if args.logging_strategy == "epoch" and self.state.global_step > last_logged:
                self.log({"loss": round((tr_loss - logged_loss) / (self.state.global_step - last_logged), 4),
                          "learning_rate": self._learning_rate()})
                logged_loss, last_logged = tr_loss, self.state.global_step
            if args.evaluation_strategy == "epoch":
                self.evaluate()
            if args.save_strategy == "epoch":
                self._save_checkpoint()
            if self.state.global_step >= max_steps:
                break
        runtime = self._modelled() - modelled0
        samples = self.state.global_step * args.per_device_train_batch_size * self.ipu_config.batch_size_factor()
        train_loss = tr_loss / max(1, self.state.global_step)
        metrics: dict[str, Any] = {"train_runtime": round(runtime, 4),
                   "train_samples_per_second": round(samples / runtime, 3) if runtime else 0.0,
                   "train_steps_per_second": round(self.state.global_step / runtime, 3) if runtime else 0.0,
                   "train_loss": train_loss}
        self.log(dict(metrics))  # printed too, as the progress bar is still open when transformers logs it
        self.is_in_train = False
        metrics["epoch"] = self.state.epoch
        return TrainOutput(self.state.global_step, train_loss, metrics)

    def _learning_rate(self) -> float:
        return float(self.lr_scheduler.get_last_lr()[0])

    def log(self, logs: dict[str, float]) -> None:
        """Add ``epoch`` (rounded to 2 places), keep it in ``state.log_history`` and print it as Hugging Face's
        progress bar does during training."""
        if self.state.epoch is not None:
            logs["epoch"] = round(self.state.epoch, 2)
        self.state.log_history.append({**logs, "step": self.state.global_step})
        if self.is_in_train and not self.args.disable_tqdm:
            _print_logs(logs)
        elif self.args.disable_tqdm:  # the PrinterCallback prints every log
            _print_logs({k: v for k, v in logs.items() if k != "total_flos"})

    # ---- evaluation ---------------------------------------------------------------------------------
    def evaluation_loop(self, dataset: Any, description: str, prediction_loss_only: bool | None = None,
                        ignore_keys: list[str] | None = None, metric_key_prefix: str = "eval") -> Any:
        from torch.utils.data import DataLoader
        from transformers.trainer_utils import EvalLoopOutput, EvalPrediction

        # trainer_qa.py's QuestionAnsweringTrainer passes the loader itself (get_eval_dataloader's)
        loader = dataset if isinstance(dataset, DataLoader) else self._loader(dataset, False)
        dataset = loader.dataset
        if len(loader) == 0:
            raise OptimumGraphcoreError(
                f"the {description.lower()} set ({len(dataset)} samples) is smaller than one inference batch "
                f"({self.args.per_device_eval_batch_size} x {self.ipu_config.batch_size_factor(for_inference=True)})",
                fix="use more samples or smaller inference_device_iterations / inference_replication_factor")
        was_training = self.model.training
        model = self.wrap_model(self.model, training=False)
        losses, preds, labels = [], [], []
        for inputs in loader:
            inputs = self._prepare_inputs(inputs)
            outputs = model(**inputs)
            loss = outputs.get("loss") if isinstance(outputs, dict) else None  # none without labels (QA eval)
            if loss is not None:
                losses.append(loss.float().reshape(-1))
            if not (prediction_loss_only or self.args.prediction_loss_only):
                # every output but the loss (QA: start and end logits), as Hugging Face's trainer gathers them
                if isinstance(outputs, dict):
                    found = [v for k, v in outputs.items() if k != "loss" and k not in (ignore_keys or [])
                             and isinstance(v, torch.Tensor)]
                else:
                    found = [v for v in outputs[1 if loss is not None else 0:] if isinstance(v, torch.Tensor)]
                logits: Any = found[0] if len(found) == 1 else tuple(found)
                if self.preprocess_logits_for_metrics is not None:
                    logits = self.preprocess_logits_for_metrics(logits, inputs.get("labels"))
                preds.append(logits)
            label_keys = self.args.label_names or [k for k in ("labels", "start_positions", "end_positions")
                                                   if k in inputs]
            if label_keys and all(k in inputs for k in label_keys):
                found_labels = [inputs[k].detach() for k in label_keys]
                labels.append(found_labels[0] if len(found_labels) == 1 else tuple(found_labels))
        self.model.train(was_training)
        self.ipu_config.train()
        predictions = _concat(preds)
        label_ids = _concat(labels)
        metrics: dict[str, Any] = {}
        if self.compute_metrics is not None and predictions is not None and label_ids is not None:
            metrics = dict(self.compute_metrics(EvalPrediction(predictions=predictions, label_ids=label_ids)))
        if losses:
            metrics["loss"] = float(torch.cat(losses).mean())
        metrics = {k if k.startswith(f"{metric_key_prefix}_") else f"{metric_key_prefix}_{k}": v
                   for k, v in metrics.items()}
        samples = len(loader) * self.args.per_device_eval_batch_size * self.ipu_config.batch_size_factor(True)
        return EvalLoopOutput(predictions=predictions, label_ids=label_ids, metrics=metrics, num_samples=samples)

    def evaluate(self, eval_dataset: Any = None, ignore_keys: list[str] | None = None,
                 metric_key_prefix: str = "eval") -> dict[str, float]:
        """Run the inference model over the evaluation set; ``compute_metrics`` on its logits and labels; the loss,
        and the MODELLED runtime."""
        before = self._modelled()
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        out = self._unpadded(self.evaluation_loop(dataset, "Evaluation", ignore_keys=ignore_keys,
                                                  metric_key_prefix=metric_key_prefix), dataset)
        self._add_speed(out.metrics, metric_key_prefix, before, out.num_samples)
        self.log(out.metrics)
        return out.metrics  # type: ignore[no-any-return]

    def predict(self, test_dataset: Any, ignore_keys: list[str] | None = None,
                metric_key_prefix: str = "test") -> Any:
        from transformers.trainer_utils import PredictionOutput

        before = self._modelled()
        out = self._unpadded(self.evaluation_loop(test_dataset, "Prediction", ignore_keys=ignore_keys,
                                                  metric_key_prefix=metric_key_prefix), test_dataset)
        self._add_speed(out.metrics, metric_key_prefix, before, out.num_samples)
        return PredictionOutput(predictions=out.predictions, label_ids=out.label_ids, metrics=out.metrics)

    def _unpadded(self, out: Any, dataset: Any) -> Any:
        """With ``pad_on_batch_axis``, the padding of the last batch cut from the predictions (one per sample of
        ``dataset``), as optimum-graphcore's ``evaluate`` and ``predict`` cut it."""
        if not self.args.pad_on_batch_axis or dataset is None or not hasattr(dataset, "__len__"):
            return out
        n = len(dataset)
        preds = out.predictions
        if preds is not None:
            preds = tuple(p[:n] for p in preds) if isinstance(preds, tuple) else preds[:n]
        return out._replace(predictions=preds, num_samples=min(n, out.num_samples))

    def _add_speed(self, metrics: dict[str, Any], prefix: str, before: float, samples: int) -> None:
        runtime = self._modelled() - before
        calls = max(1, samples // max(1, self.args.per_device_eval_batch_size
                                      * self.ipu_config.batch_size_factor(True)))
        metrics.update({f"{prefix}_runtime": round(runtime, 4),
                        f"{prefix}_samples_per_second": round(samples / runtime, 3) if runtime else 0.0,
                        f"{prefix}_steps_per_second": round(calls / runtime, 3) if runtime else 0.0})
        if self.state.epoch is not None:
            metrics["epoch"] = self.state.epoch

    # ---- metrics, like Hugging Face's Trainer -------------------------------------------------------
    def is_world_process_zero(self) -> bool:
        return True

    def metrics_format(self, metrics: dict[str, float]) -> dict[str, Any]:
        """transformers' ``metrics_format`` (a function in 5, a Trainer method in 4): runtimes as h:mm:ss.cc,
        memory in MB, FLOs in GF, floats to 4 places."""
        out: dict[str, Any] = dict(metrics)
        for k, v in out.items():
            if "_mem_" in k:
                out[k] = f"{int(v) >> 20}MB"
            elif "_runtime" in k:
                out[k] = f"{str(__import__('datetime').timedelta(seconds=int(abs(v))))}.{int(abs(v) % 1 * 100):02d}"
            elif k == "total_flos":
                out[k] = f"{int(v) >> 30}GF"
            elif isinstance(v, float):
                out[k] = round(v, 4)
        return out

    def log_metrics(self, split: str, metrics: dict[str, float]) -> None:
        from transformers.trainer_pt_utils import log_metrics

        log_metrics(self, split, metrics)

    def save_metrics(self, split: str, metrics: dict[str, float], combined: bool = True) -> None:
        from transformers.trainer_pt_utils import save_metrics

        os.makedirs(self.args.output_dir, exist_ok=True)
        save_metrics(self, split, metrics, combined)

    def save_state(self) -> None:
        os.makedirs(self.args.output_dir, exist_ok=True)
        self.state.save_to_json(os.path.join(self.args.output_dir, "trainer_state.json"))

    # ---- saving ------------------------------------------------------------------------------------
    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """The model (``save_pretrained``: config and safetensors weights), its IPU config, the tokenizer or feature
        extractor, and the training arguments (``training_args.json``), in ``output_dir``."""
        out = Path(output_dir or self.args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        save = getattr(self.model, "save_pretrained", None)
        if callable(save):
            save(str(out))
        else:
            from safetensors.torch import save_file

            save_file({k: v.contiguous() for k, v in self.model.state_dict().items()}, str(out / "model.safetensors"))
        self.ipu_config.save_pretrained(out)
        if self.tokenizer is not None and hasattr(self.tokenizer, "save_pretrained"):
            self.tokenizer.save_pretrained(str(out))
        _write_json(out / "training_args.json", _plain(self.args.to_dict()))

    def create_model_card(self, language: str | None = None, license: str | None = None,  # noqa: A002
                          tags: Any = None, model_name: str | None = None, finetuned_from: str | None = None,
                          tasks: Any = None, dataset_tags: Any = None, dataset: Any = None,
                          dataset_args: Any = None, **_: Any) -> None:
        """A model card, ``README.md`` in ``output_dir``: what was fine-tuned from what, on which data, and the
        evaluation results logged (Hugging Face's fuller card lists the same)."""
        out = Path(self.args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        evals = {k: v for log in self.state.log_history for k, v in log.items() if k.startswith("eval_")}
        lines = ["---", f"license: {license}" if license else "", "tags:", "- generated_from_trainer",
                 *[f"- {t}" for t in ([tags] if isinstance(tags, str) else tags or [])], "---", "",
                 f"# {model_name or out.name}", "",
                 f"This model is a fine-tuned version of {finetuned_from or 'a model'} on "
                 f"{dataset or dataset_tags or 'a dataset'} ({tasks or 'training'}), with optimum.graphcore's "
                 "IPUTrainer on accelkit's simulated IPUs.", "",
                 *[f"- {k}: {v}" for k, v in evals.items()]]
        (out / "README.md").write_text("\n".join(x for x in lines if x is not None) + "\n")

    def _save_checkpoint(self) -> None:
        folder = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        self.save_model(str(folder))
        _save_state(self.optimizer.state_dict(), folder / "optimizer")
        _write_json(folder / "scheduler.json", _plain(self.lr_scheduler.state_dict()))
        self.state.save_to_json(str(folder / "trainer_state.json"))
        limit = self.args.save_total_limit
        if limit is not None and limit > 0:
            kept = sorted((p for p in Path(self.args.output_dir).glob("checkpoint-*") if p.is_dir()),
                          key=lambda p: int(re.sub(r"\D", "", p.name.split("-")[-1]) or 0))
            for old in kept[:-limit]:
                shutil.rmtree(old, ignore_errors=True)

    def _load_checkpoint(self, folder: str) -> None:
        path = Path(folder)
        pickled = [n for n in ("pytorch_model.bin", "optimizer.pt", "scheduler.pt") if (path / n).is_file()]
        weights = path / "model.safetensors"
        if pickled and not weights.is_file() or any(n != "pytorch_model.bin" for n in pickled):
            raise OptimumGraphcoreError(
                f"IPUTrainer.train(resume_from_checkpoint={folder!r}) would load {pickled[0]}, a pickle, which can "
                "run code it carries: accelkit loads no pickles",
                fix="resume from a checkpoint this trainer wrote (model.safetensors, optimizer.safetensors + "
                    "optimizer.json, scheduler.json), or train from the start")
        if not weights.is_file():
            raise ValueError(f"Can't find a valid checkpoint at {folder}")
        from safetensors.torch import load_file

        self.model.load_state_dict(load_file(str(weights)), strict=False)
        if (path / "optimizer.json").is_file() and self.optimizer is not None:
            self.optimizer.load_state_dict(_load_state(path / "optimizer"))
        if (path / "scheduler.json").is_file() and self.lr_scheduler is not None:
            self.lr_scheduler.load_state_dict(json.loads((path / "scheduler.json").read_text()))
        if (path / "trainer_state.json").is_file():
            saved = json.loads((path / "trainer_state.json").read_text())
            self.state.global_step = int(saved.get("global_step", 0))
            self.state.log_history = list(saved.get("log_history", []))
        if self.training_model is not None:
            self.training_model.copyWeightsToDevice()

    def __getattr__(self, name: str) -> Any:
        if name in ("hyperparameter_search", "push_to_hub", "init_git_repo",
                    "add_callback", "pop_callback", "remove_callback", "compile_model", "floating_point_ops"):
            _refuse(f"IPUTrainer.{name}", "is not part of accelkit's trainer",
                    "train, evaluate, predict, log_metrics, save_metrics, save_model and save_state are answered")
        raise AttributeError(f"'IPUTrainer' object has no attribute {name!r}")


def _plain_model_outputs(model: nn.Module) -> None:
    """transformers before 4.35 did not register its ``ModelOutput`` classes with PyTorch's pytree, so the PopTorch
    facade would see ``SequenceClassifierOutput(loss=..., logits=...)`` as one opaque leaf: there ``forward``'s output
    is handed on as the plain dict of its tensors (same keys, same values). transformers 5's pass through."""
    if "_accelkit_plain_outputs" in vars(model):
        return
    import functools

    forward = model.forward
    nodes = getattr(torch.utils._pytree, "SUPPORTED_NODES", None)

    @functools.wraps(forward)
    def plain(*args: Any, **kwargs: Any) -> Any:
        out = forward(*args, **kwargs)
        if isinstance(out, dict) and type(out) is not dict and nodes is not None and type(out) not in nodes:
            return {k: v for k, v in out.items() if v is not None}
        return out

    vars(model)["forward"] = plain
    vars(model)["_accelkit_plain_outputs"] = True


def _concat(parts: list[Any]) -> Any:
    """Per-batch outputs joined along the batch axis as numpy (a tuple of outputs stays a tuple); None if none."""
    if not parts:
        return None
    if isinstance(parts[0], tuple):
        return tuple(_concat([p[i] for p in parts]) for i in range(len(parts[0])))
    joined = torch.cat([p.detach() for p in parts])
    return (joined.float() if joined.is_floating_point() else joined).numpy()


class _Control:
    """transformers' ``TrainerControl``: what callbacks may ask of the loop (nothing here: no callbacks run)."""

    should_training_stop = False
    should_epoch_stop = False
    should_save = False
    should_evaluate = False
    should_log = False


class _CallbackHandler:
    """``trainer.callback_handler``: with no callbacks, each ``on_*`` event returns the control unchanged (as
    transformers' handler does with only its default callbacks); trainer_qa.py calls ``on_evaluate``."""

    def __init__(self, control: _Control) -> None:
        self.control = control
        self.callbacks: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args, **kwargs: self.control
        raise AttributeError(name)


@dataclass
class _State:
    """transformers' ``TrainerState``: what the trainer writes as ``trainer_state.json``."""

    epoch: float | None = None
    global_step: int = 0
    max_steps: int = 0
    num_train_epochs: int = 0
    logging_steps: int = 500
    save_steps: int = 500
    train_batch_size: int | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)
    best_metric: float | None = None
    best_model_checkpoint: str | None = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True

    def save_to_json(self, json_path: str) -> None:
        Path(json_path).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")


# ---- optimum.graphcore.utils and optimum.graphcore.data -----------------------------------------------------------
def check_min_version(min_version: str) -> None:
    """``optimum.graphcore.utils.check_min_version``: the examples' guard that optimum-graphcore is recent enough
    (this facade follows :data:`__version__`)."""
    from packaging import version

    if version.parse(__version__.split("+")[0]) < version.parse(min_version):
        raise ImportError(f"This example requires a minimum version of optimum-graphcore of {min_version}, but the "
                          f"version found is {__version__} (accelkit's optimum.graphcore)")


def pad_on_batch_axis(batch_size: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``optimum.graphcore.data.pad_on_batch_axis(batch_size)``: wraps a data collator so each batch it returns has
    ``batch_size`` rows, the short last one filled by repeating its samples (optimum-graphcore's rule)."""
    import functools

    def pad(x: torch.Tensor) -> torch.Tensor:
        if x.size(0) == batch_size:
            return x
        repeats = [batch_size // x.size(0) + 1] + [1] * (x.ndim - 1)
        return x.repeat(*repeats)[:batch_size]

    def decorator(collator: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(collator)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            batch = collator(*args, **kwargs)
            for k, v in batch.items():
                batch[k] = pad(v) if isinstance(v, torch.Tensor) else v
            return batch

        return wrapper

    return decorator


def _max_tokens_masked_collator() -> type:
    """``optimum.graphcore.data.DataCollatorForLanguageModelingWithMaxTokensMasked(max_seq_length, tokenizer,
    mlm_probability=...)``: transformers' MLM collator that masks at most ``max_num_masked_tokens`` tokens a
    sequence (the binomial count's mean + 2 standard deviations, rounded up to 16, capped at the length), so the
    pipelined BERT's head sees a fixed number of masked tokens; optimum-graphcore's masking rule (80% [MASK], 10%
    random, 10% kept)."""
    from transformers import DataCollatorForLanguageModeling

    class DataCollatorForLanguageModelingWithMaxTokensMasked(DataCollatorForLanguageModeling):  # type: ignore[misc]
        def __init__(self, max_seq_length: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.max_seq_length = max_seq_length
            mean = max_seq_length * self.mlm_probability
            std = math.sqrt(max_seq_length * self.mlm_probability * (1 - self.mlm_probability))
            self.max_num_masked_tokens = min(math.ceil((mean + 2 * std) / 16) * 16, max_seq_length)

        def torch_call(self, examples: list[Any]) -> dict[str, Any]:
            return dict(super().torch_call(examples))

        def torch_mask_tokens(self, inputs: Any, special_tokens_mask: Any = None, **_: Any) -> tuple[Any, Any]:
            labels = inputs.clone()
            probability = torch.full(labels.shape, self.mlm_probability)
            if special_tokens_mask is None:
                special_tokens_mask = torch.tensor(
                    [self.tokenizer.get_special_tokens_mask(v, already_has_special_tokens=True)
                     for v in labels.tolist()], dtype=torch.bool)
            probability.masked_fill_(special_tokens_mask.bool(), value=0.0)
            masked = torch.bernoulli(probability)
            # at most max_num_masked_tokens a row: unmask the rest, chosen at random among the masked
            keep_out = self.max_seq_length - self.max_num_masked_tokens
            if keep_out > 0:
                drop = torch.topk(-masked + torch.rand(masked.size()), k=min(keep_out, masked.size(1)), dim=1).indices
                masked.scatter_(1, drop, 0)
            masked_b = masked.bool()
            labels[~masked_b] = -100
            replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_b
            inputs[replaced] = self.tokenizer.convert_tokens_to_ids(self.tokenizer.mask_token)
            random_ = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked_b & ~replaced
            words = torch.randint(len(self.tokenizer), labels.shape, dtype=torch.long)
            inputs[random_] = words[random_]
            return inputs, labels

    DataCollatorForLanguageModelingWithMaxTokensMasked.__module__ = "optimum.graphcore.data.data_collator"
    return DataCollatorForLanguageModelingWithMaxTokensMasked


_LAZY: dict[str, Callable[[], Any]] = {
    "DataCollatorForLanguageModelingWithMaxTokensMasked": _max_tokens_masked_collator}
_BUILT: dict[str, Any] = {}


# ---- what is refused -------------------------------------------------------------------------------------------
_REFUSED: dict[str, tuple[str, str]] = {
    "pipeline": ("runs a transformers pipeline on IPUs (pipeline('text-classification', ...))",
                 "run the model with poptorch.inferenceModel(model, ipu_config.to_options(for_inference=True))"),
    "IPUSeq2SeqTrainer": ("trains encoder-decoder models with generation",
                          "write the PopTorch loop (poptorch.trainingModel) for the model"),
    "IPUSeq2SeqTrainingArguments": ("configures the seq2seq trainer", "use IPUTrainingArguments with IPUTrainer"),
    "IPUTrainerCallback": ("hooks into the trainer's loop", "leave callbacks out"),
}
for _name in ("DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask", "IPUGenerationMixin", "PipelineMixin", "IPUConfigAttribute"):
    _REFUSED[_name] = ("is not part of accelkit's optimum.graphcore (IPUConfig, IPUTrainingArguments, IPUTrainer)",
                       "use transformers' own class, or write the PopTorch loop")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        if name not in _BUILT:
            _BUILT[name] = _LAZY[name]()
        return _BUILT[name]
    if name in _REFUSED:
        what, fix = _REFUSED[name]
        _refuse(name, what, fix)
    raise AttributeError(f"module 'optimum.graphcore' (accelkit's) has no attribute {name!r}")


def refuse_module(module: str) -> None:
    """Raise the refusal for a module of optimum-graphcore accelkit does not answer (on its import)."""
    raise OptimumGraphcoreError(
        f"{module} is not simulated by accelkit: only optimum.graphcore's IPUConfig, IPUTrainingArguments and "
        "IPUTrainer are (Graphcore's ViT fine-tuning tutorial)",
        fix="import those from optimum.graphcore, or write the PopTorch loop: poptorch.trainingModel(model, "
            "poptorch.Options(), optimizer) (examples/vendor/poptorch_bert.py has that shape)")



# ---- checkpoint state without pickles -------------------------------------------------------------
def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it: tuples as lists, enums and other objects as their text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(getattr(value, "value", value))


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2))
    os.replace(tmp, path)


def _save_state(state: dict[str, Any], stem: Path) -> None:
    """An optimizer's ``state_dict`` as ``<stem>.safetensors`` (its tensors) and ``<stem>.json`` (the rest, each
    tensor named by its key there)."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}

    def walk(v: Any, key: str) -> Any:
        if isinstance(v, torch.Tensor):
            tensors[key] = v.detach().contiguous()
            return {"__tensor__": key}
        if isinstance(v, dict):
            return {"__dict__": [[_plain(k), walk(x, f"{key}.{k}")] for k, x in v.items()]}
        if isinstance(v, (list, tuple)):
            return [walk(x, f"{key}.{i}") for i, x in enumerate(v)]
        return _plain(v)

    layout = walk(state, "s")
    save_file(tensors, str(stem.with_suffix(".safetensors")))
    _write_json(stem.with_suffix(".json"), layout)


def _load_state(stem: Path) -> dict[str, Any]:
    """What :func:`_save_state` wrote, back as a ``state_dict`` (keys keep their types: the optimizer's per-parameter
    state is keyed by integers)."""
    from safetensors.torch import load_file

    tensors = load_file(str(stem.with_suffix(".safetensors")))

    def back(v: Any) -> Any:
        if isinstance(v, dict) and "__tensor__" in v:
            return tensors[v["__tensor__"]]
        if isinstance(v, dict) and "__dict__" in v:
            return {k: back(x) for k, x in v["__dict__"]}
        if isinstance(v, list):
            return [back(x) for x in v]
        return v

    out = back(json.loads(stem.with_suffix(".json").read_text()))
    assert isinstance(out, dict)
    return out

__all__ = ["HUB_CONFIGS", "IPUConfig", "IPUTrainer", "IPUTrainingArguments", "IncompatibleIPUConfigError",
           "OptimumGraphcoreError", "check_min_version", "pad_on_batch_axis", "refuse_module"]
