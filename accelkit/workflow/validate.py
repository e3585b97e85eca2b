"""``validate``: accelkit's performance model against results that vendors and papers published.

Every row of ``reference/published_results.csv`` with ``use=validate`` is run through the accelkit
call that models it, and the prediction is compared with the published figure:
``error = (predicted - published) / published``. Goals: median |error| ≤ 15% and every case within
1.5x (``max(predicted / published, published / predicted) ≤ 1.5``). The model has no per-case
corrections: these numbers come from the chip's catalog figures and the few constants in
:mod:`accelkit.sim.constants`.

``gpu-like`` rows are published per-accelerator training and inference throughputs of the GPU-like families
(NVIDIA's DeepLearningExamples performance tables, Intel's Gaudi model-performance pages), each run on the
software stack the published run used (``stack=``: eager, compiled or engine on a GPU). They are shown as their
own table with their own median against the same 15% goal, apart from the counted cases.

``informational`` rows are published figures that a weights-from-memory decode model cannot reach
with the published hardware (speculative decoding and similar techniques explain the gap). They are
shown apart, as accelkit's prediction and the weight-read bound against the published figure, and
never counted in the goals.

    from accelkit.sim.validate import validate
    result = validate()                 # ~1-2 min: builds Llama, GPT-22B and BERT-Large on the meta device
    print(result.table())
    result.median_abs_error, result.max_ratio, result.ok

How each row is run is data (:data:`CASES`): the model, the accelkit call and its arguments, and an
``assumption`` wherever the row leaves something open. :func:`check_cases` makes sure the mapping
agrees with every figure the row states.
"""

from __future__ import annotations

import csv
import functools
import html
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit.boundary import got
from accelkit.compiler.program import Parallel, compile
from accelkit.errors import ArgumentError, UnknownNameError
from accelkit.hardware.precision import element_bytes
from accelkit.sim.bench import (
    REFERENCE_DIR_ENV,
    BenchValidation,
    columns,
    reference_dir,
    reference_files,
    validate_bench,
)
from accelkit.sim.goals import GPU_LIKE, PUBLISHED, SMALL_MODELS
from accelkit.sim.measured import MeasuredValidation, validate_measured
from accelkit.sim.serve import serve

REFERENCE_CSV = Path(__file__).parents[1] / "sim" / "reference" / "published_results.csv"
"""The package's copy of ``shared/reference/published_results.csv`` (its rows and sources)."""

GOAL_MEDIAN_ABS_ERROR = PUBLISHED.median_abs_error  # median |predicted - published| / published over the cases
GOAL_MAX_RATIO = PUBLISHED.max_ratio  # every case within 1.5x of its published figure

# ---------------------------------------------------------------------------------------------
# the models the rows name (shapes from shared/reference/README.md), built on the meta device
# ---------------------------------------------------------------------------------------------
LLAMA_SHAPES: dict[str, tuple[int, int, int, int, int, int]] = {
    # name: (hidden, layers, heads, kv heads, ffn, vocab)
    "llama3-8b": (4096, 32, 32, 8, 14336, 128256),  # Llama-3-8B and Llama-3.1-8B
    "llama3-70b": (8192, 80, 64, 8, 28672, 128256),  # Llama-3-70B and Llama-3.1-70B
    "llama31-405b": (16384, 126, 128, 8, 53248, 128256),
    "llama2-70b": (8192, 80, 64, 8, 28672, 32000),
    "llama-7b": (4096, 32, 32, 32, 11008, 32000),  # LLaMA-7B and Llama-2-7B (Touvron et al. 2023, Table 2 each)
    "mistral-7b": (4096, 32, 32, 8, 14336, 32000),  # Mistral 7B (Jiang et al. 2023, arXiv 2310.06825, Table 1)
    # Llama-2-13B (Touvron et al. 2023, arXiv 2307.09288; HabanaAI/Megatron-LM examples/llama/pretrain_llama.sh's
    # LLAMA_VER=2, LLAMA_MODEL_SIZE=13 sizes)
    "llama2-13b": (5120, 40, 40, 40, 13824, 32000),
}


def _llama(name: str) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, kv, ffn, vocab = LLAMA_SHAPES[name]
    cfg = LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv, intermediate_size=ffn, vocab_size=vocab, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval()


def maxtext_dims(scale: int) -> tuple[int, int, int, int]:
    """(embedding, query heads = key/value heads, MLP width, layers) of MaxText's default decoder at
    ``global_parameter_scale=scale`` (AI-Hypercomputer/maxtext, MaxText/pyconfig.py, get_individual_scales, over
    configs/base.yml's base_emb_dim 2048, base_num_query_heads 16, base_mlp_dim 7168, base_num_decoder_layers 16;
    head_dim 128, a 32,000-word vocabulary, a SwiGLU MLP, untied embeddings)."""
    base, rem = divmod(int(math.log2(scale)), 3)
    heads = base + int(rem > 0)
    return 2048 * 2 ** (base + int(rem > 1)), 16 * 2 ** heads, 7168 * 2 ** heads, 16 * 2 ** base


def _maxtext(scale: int) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    emb, heads, mlp, layers = maxtext_dims(scale)
    cfg = LlamaConfig(hidden_size=emb, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                      head_dim=128, intermediate_size=mlp, vocab_size=32000, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg)


def maxtext_step_flops(scale: int, per_device_batch: int, seq: int = 2048) -> float:
    """FLOPs one chip does in a training step as MaxText counts them (its calculate_tflops_training_per_device,
    late 2023: the matmuls and the full, uncausal attention, x3 for forward and backward, no rematerialization):
    what its TFLOP/s per chip divides."""
    emb, heads, mlp, layers = maxtext_dims(scale)
    bs, hd = per_device_batch * seq, 128
    per_layer = 2 * bs * mlp * emb * 2 + 2 * bs * mlp * emb + 2 * bs * emb * 3 * heads * hd \
        + 4 * bs * seq * heads * hd + 2 * bs * emb * heads * hd
    return 3.0 * (per_layer * layers + 2 * bs * emb * 32000)


def _gpt22b() -> nn.Module:
    """Korthikanti et al. 2022, Table 3: 22 B parameters, hidden 6144, 48 layers, 64 heads, seq 2048."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_embd=6144, n_layer=48, n_head=64, vocab_size=51200, n_positions=2048, use_cache=False)
    with torch.device("meta"):
        return GPT2LMHeadModel(cfg)


def _gpt2_small() -> nn.Module:
    """GPT-2 small (124 M: 12 layers of 768, 12 heads, a 50,257-word vocabulary, 1,024 positions), transformers'
    ``GPT2LMHeadModel``, which Graphcore's PopTorch GPT-2 example wraps."""
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        return GPT2LMHeadModel(GPT2Config(use_cache=False))


def _bert_large() -> nn.Module:
    from transformers import BertConfig, BertForPreTraining

    cfg = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                     vocab_size=30522)
    with torch.device("meta"):
        return BertForPreTraining(cfg)


def _bert_base_graphcore() -> nn.Module:
    """BERT-Base for pretraining as Graphcore's PopART example configures it (pretrain_base_128.json: 12 layers of
    768, 12 heads, a 30,400-word vocabulary)."""
    from transformers import BertConfig, BertForPreTraining

    with torch.device("meta"):
        return BertForPreTraining(BertConfig(vocab_size=30400))


def _bert_encoder(hidden: int, layers: int, heads: int, vocab: int) -> nn.Module:
    """A BERT encoder without a head (transformers' ``BertModel``: the benchmarks' "Raw Output (AutoModel)")."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, vocab_size=vocab)
    with torch.device("meta"):
        return BertModel(cfg).eval()


def _bert_large_nvidia(head: str) -> nn.Module:
    """BERT-Large as NVIDIA's DeepLearningExamples write it (``PyTorch/LanguageModeling/BERT/modeling.py``): attention
    computed op by op (matmul, scale, mask, softmax, dropout, matmul), not as one fused kernel; ``head`` is
    ``"pretraining"`` (masked LM and next sentence) or ``"squad"`` (a span head for question answering)."""
    from transformers import BertConfig, BertForPreTraining, BertForQuestionAnswering

    # run_pretraining.py and run_squad.py pad the vocabulary to a multiple of 8 ("Padding for divisibility by 8"):
    # 30,522 -> 30,528, so the masked-LM head's GEMMs run on aligned kernels
    cfg = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                     vocab_size=30528)
    cfg._attn_implementation = "eager"  # transformers' own attention, op by op (its default is fused SDPA)
    with torch.device("meta"):
        return BertForPreTraining(cfg) if head == "pretraining" else BertForQuestionAnswering(cfg)


def _bert_large_squad() -> nn.Module:
    """BERT-Large with a question-answering head and fused attention (a serving engine's multi-head attention kernel)."""
    from transformers import BertConfig, BertForQuestionAnswering

    cfg = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                     vocab_size=30522)
    with torch.device("meta"):
        return BertForQuestionAnswering(cfg).eval()


def _efficientnet_b0(training: bool) -> nn.Module:
    """EfficientNet-B0 at 224 x 224 with 1,000 classes (transformers' EfficientNet at B0's width and depth: the
    network the H100 timings measured, accelkit.sim.measured)."""
    from accelkit.sim.measured import _vision

    return _vision("efficientnet-b0", training)


def _gptj_6b() -> nn.Module:
    """GPT-J 6B as the Cerebras Model Zoo's params_gptj_6B.yaml sets it: hidden 4,096, 28 layers, 16 heads, rotary
    dimension 64, feed-forward 16,384, GPT-2's 50,257-word vocabulary, 2,048 positions."""
    from transformers import GPTJConfig, GPTJForCausalLM

    cfg = GPTJConfig(n_embd=4096, n_layer=28, n_head=16, rotary_dim=64, n_inner=16384, n_positions=2048,
                     vocab_size=50257, use_cache=False)
    with torch.device("meta"):
        return GPTJForCausalLM(cfg)


def _esm2_35m() -> nn.Module:
    """ESM-2 t12 35M as the Model Zoo's params_esm2_t12_35M_UR50D.yaml sets it: hidden 480, 12 layers, 20 heads,
    feed-forward 1,920, 33 tokens, 1,026 positions (rotary), masked-LM head."""
    from transformers import EsmConfig, EsmForMaskedLM

    cfg = EsmConfig(vocab_size=33, hidden_size=480, num_hidden_layers=12, num_attention_heads=20,
                    intermediate_size=1920, max_position_embeddings=1026, position_embedding_type="rotary",
                    pad_token_id=1, mask_token_id=32)
    with torch.device("meta"):
        return EsmForMaskedLM(cfg)


def _vit_base_16() -> nn.Module:
    """ViT-B/16 at 224 x 224 with 1,000 classes (the Model Zoo's params_vit_base_patch_16_imagenet_1k.yaml:
    hidden 768, 12 layers, 12 heads, feed-forward 3,072), transformers' ViTForImageClassification."""
    from transformers import ViTConfig, ViTForImageClassification

    with torch.device("meta"):
        return ViTForImageClassification(ViTConfig(num_labels=1000))


def _resnet50() -> nn.Module:
    """ResNet-50 v1.5 (transformers' ResNetConfig defaults: depths 3-4-6-3, 1000 classes)."""
    from transformers import ResNetConfig, ResNetForImageClassification

    with torch.device("meta"):
        return ResNetForImageClassification(ResNetConfig()).eval()


def _on_meta(make: Callable[[], nn.Module]) -> nn.Module:
    with torch.device("meta"):
        return make()


class _GraphcoreDataLoadingNet(nn.Module):
    """The layer shapes of the classifier in Graphcore's PopTorch tutorial "Efficient data loading" (1 x 128 x 128
    images, 10 classes; the model returns its NLL loss, as PopTorch's trainingModel asks)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 5, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(5, 12, 5)
        self.norm = nn.GroupNorm(3, 12)
        self.fc1 = nn.Linear(41772, 100)
        self.fc2 = nn.Linear(100, 10)

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(pixel_values)))
        x = self.norm(torch.relu(self.conv2(x)))
        x = torch.relu(self.fc1(torch.flatten(x, start_dim=1)))
        return nn.functional.nll_loss(torch.log_softmax(self.fc2(x), dim=0), labels)


class _GraphcoreMnistNet(nn.Module):
    """The classifier of Graphcore's PopTorch MNIST tutorial (``tutorials/simple_applications/pytorch/mnist``: two
    3 x 3 convolutions with max pooling, Linear(1600, 128), Linear(128, 10), softmax) with its cross-entropy loss,
    returning the loss and the predictions as the tutorial's ``TrainingModelWithLoss`` does."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(1600, 128)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.relu(self.pool(self.conv1(pixel_values)))  # (B, 1, 28, 28) -> (B, 32, 13, 13)
        x = torch.relu(self.pool(self.conv2(x)))  # -> (B, 64, 5, 5)
        x = self.fc2(self.drop(torch.relu(self.fc1(x.view(-1, 1600)))))
        preds = torch.softmax(x, dim=1)
        return nn.functional.cross_entropy(preds, labels), preds  # the loss first: the step differentiates it


class _GraphcorePipelinedMnistNet(nn.Module):
    """The network of Graphcore's PopTorch pipelining tutorial (``tutorials/pytorch/pipelining``: two 5 x 5
    convolutions with max pooling and ReLU, Linear(320, 256), ReLU, Linear(256, 10), in blocks B1-B4) with its
    cross-entropy loss, returned first beside the predictions as its ``TrainingModelWithLoss`` returns them."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 10, 5), nn.MaxPool2d(2), nn.ReLU())  # (B, 1, 28, 28) -> (B, 10, 12, 12)
        self.layer2 = nn.Sequential(nn.Conv2d(10, 20, 5), nn.MaxPool2d(2), nn.ReLU())  # -> (B, 20, 4, 4)
        self.layer3 = nn.Sequential(nn.Linear(320, 256), nn.ReLU())
        self.layer4 = nn.Linear(256, 10)

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.layer4(self.layer3(self.layer2(self.layer1(pixel_values)).view(-1, 320)))
        return nn.functional.cross_entropy(out, labels), out


@functools.cache
def _mnist_pipeline_rate() -> float:
    """Samples per second this host's CPU reads MNIST-sized images through torchvision's MNIST pipeline in the
    training process (a PIL image per sample, ``ToTensor``, ``Normalize``, collated into the 400-image batches of
    Graphcore's MNIST tutorial): MEASURED here by :func:`_cpu_rate`."""
    from accelkit.data.images import Compose, DigitImages, Normalize, ToTensor

    images = DigitImages(2000, 0, transform=Compose([ToTensor(), Normalize((0.1307,), (0.3081,))]))
    return _cpu_rate(torch.utils.data.DataLoader(images, batch_size=400, shuffle=True, drop_last=True, num_workers=0))


def _cpu_rate(loader: Any, passes: int = 5) -> float:
    """Samples per second of CPU time a loader without workers takes from the thread that iterates it (as it runs
    in a training process): the fastest of ``passes`` passes after a warm-up batch each, on one intra-op thread,
    each timed by that thread's CPU time (``time.thread_time``), so that time spent off the CPU (other processes
    running on the cores, as test workers beside it do) does not count: what the CPU itself can do."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rates = []
        for _ in range(passes):
            it = iter(loader)
            next(it)  # warm-up: the first batch of a pass
            t0, seen = time.thread_time(), 0
            for batch in it:
                seen += int(batch[0].shape[0])
            rates.append(seen / max(time.thread_time() - t0, 1e-9))
    finally:
        torch.set_num_threads(threads)
    return max(rates)


MODELS: dict[str, Callable[[], nn.Module]] = {
    "graphcore-mnist-net": lambda: _on_meta(_GraphcoreMnistNet),
    "graphcore-pipelined-mnist-net": lambda: _on_meta(_GraphcorePipelinedMnistNet),
    "graphcore-data-loading-net": lambda: _on_meta(_GraphcoreDataLoadingNet),
    "linear-10-5": lambda: _on_meta(lambda: nn.Linear(10, 5)),
    **{name: (lambda name=name: _llama(name)) for name in LLAMA_SHAPES},  # type: ignore[misc]
    "gpt-22b": _gpt22b,
    "gpt2-small": _gpt2_small,
    "bert-large": _bert_large,
    "bert-base-graphcore": _bert_base_graphcore,
    "bert-base-cased": lambda: _bert_encoder(768, 12, 12, 28996),
    "bert-large-uncased": lambda: _bert_encoder(1024, 24, 16, 30522),
    "resnet50": _resnet50,
    "bert-large-nvidia": lambda: _bert_large_nvidia("pretraining"),
    "bert-large-squad-nvidia": lambda: _bert_large_nvidia("squad"),
    "bert-large-squad": _bert_large_squad,
    "efficientnet-b0": lambda: _efficientnet_b0(False),
    "efficientnet-b0-train": lambda: _efficientnet_b0(True),
    "gptj-6b": _gptj_6b,
    "esm2-35m": _esm2_35m,
    "vit-base-16": _vit_base_16,
    "maxtext-16b": lambda: _maxtext(16),
    "maxtext-32b": lambda: _maxtext(32),
}
"""Builders for the models the reference rows name; each returns a model on the meta device."""


# ---------------------------------------------------------------------------------------------
# the case mapping: how each reference row is run
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """How one reference row is run in accelkit.

    ``call`` is ``"serve"`` (:func:`accelkit.serve` with ``kwargs``), ``"train"``
    (:func:`accelkit.compile` with ``training=True``, example inputs of shape ``inputs`` and
    ``kwargs``) or ``"infer"`` (:func:`accelkit.compile` on images of shape ``inputs``, or on token ids
    when ``inputs`` is (batch, sequence)). ``assumption`` says what the row leaves open and how it was filled in.
    """

    model: str
    call: str
    kwargs: dict[str, Any]
    inputs: tuple[int, ...] | None = None  # (batch, sequence) of a training case; (batch, C, H, W) of an image one
    assumption: str = ""
    # arguments measured on this host when the case runs (a tutorial's input pipeline, timed here): name -> how
    measured: dict[str, Callable[[], Any]] = field(default_factory=dict)
    # a text training case: the keyword tensors its run feeds beside input_ids, as the run's own script names them
    # (each crosses the host link, on an IPU in a stream copy of its own): token-shaped, or one per sequence for a
    # name ending in "sentence_label"
    feeds: tuple[str, ...] = ()
    channels_last: bool = False  # an image case's images are channels last (NVIDIA's AMP recipes: memory_format nhwc)
    # a packed run: each modelled sample is one pack holding this many of the items (sequences) the published
    # throughput counts, on average; the modelled samples/s is multiplied by it before the comparison
    items_per_sample: float = 1.0
    # the constant this row's published figure set (the model was derived from it): shown, not counted in its
    # table's median
    sets: str = ""

    @property
    def chips(self) -> int:
        return int(self.kwargs.get("chips", 1))

    @property
    def precision(self) -> str:
        return str(self.kwargs.get("precision", "bf16"))


def _serve(model: str, target: str, chips: int, batch: int, prompt: int, output: int, assumption: str = "",
           **kw: Any) -> Case:
    return Case(model, "serve", {"target": target, "chips": chips, "batch": batch, "prompt_tokens": prompt,
                                 "output_tokens": output, **kw}, assumption=assumption)


_SHORT_LONG = ('the row says "short" prompt / "long" output: read as 128 tokens in, 512 out '
               "(tokens/s per user is the decode rate, so it barely depends on this)")
_SN40L_SPLIT = ("the paper does not give the split over the 8 sockets: serve picks the fastest that holds "
                "(tensor parallel 8)")
_TRT = "TensorRT-LLM's fused kernels are modelled as accelkit's generic GPU kernels (one launch per fused kernel)"
_POLARIS = ("the A100 runs are ALCF jobs, so Polaris' A100 SXM4 40 GB (1,555 GB/s): modelled as a100-40gb; "
            + _TRT)

_NEURON_DP = ("AWS runs one copy of the model per NeuronCore (data parallel); accelkit models the chip's 2 "
              "NeuronCores as one")

_PT_XLA_TP = ("PyTorch/XLA shards each layer over the chips (FairScale-style tensor parallelism, an all-reduce "
              "after each attention and MLP block), as the blog describes: modelled as Parallel(tensor=chips)")
_V4_SLICE = "a v4-N slice has N/2 chips (Cloud TPU names v4 slices by TensorCores, two per chip)"
_LLAMA_V4 = (_V4_SLICE + "; " + _PT_XLA_TP + "; the blog's experiments use 256-token prompts and batch 1 (its "
             "sizing example); the generation length is not given: 256 is assumed (the per-token latency barely "
             "depends on it)")

_OH_FP8 = ("Intel's published run command (Gaudi-tutorials' Benchmarking_on_Optimum-habana_with_fp8) is optimum-habana's "
           "run_generation.py, whose throughput is batch x new tokens over the whole generate() call, prefill included: "
           "modelled as batch x output tokens over ak.serve's end-to-end latency, every sequence generating all its "
           "tokens; FP8 from INC's maxabs_quant.json, which quantizes every Linear, MatMul and the KV cache (lm_head "
           "alone stays bf16): modelled as fp8 weights, matmuls and KV cache")

_OH_FP8_GAUDI2 = "Intel's Gaudi 2 table names no run command: read as the Gaudi 3 table's. " + _OH_FP8

_GC_DATA_LOADING = ("the tutorial's run: trainingModel with SGD (momentum 0.9), micro-batch 16, 1 replica, "
                    "deviceIterations 50 (800 items per call), fp32, on an IPU-POD (a GC200 IPU); items/s = items over "
                    "the wall time of 12 calls, compile excluded")

# PopART's BERT feeds 7 tensors per micro-batch (graphcore/examples nlp/bert/popart/bert.py, bert_add_inputs: indices,
# positions, segments, two mask indices, the masked-LM labels and the next-sentence labels); transformers' BERT takes 6
_BERT_FEEDS = ("attention_mask", "token_type_ids", "position_ids", "labels", "next_sentence_label")
_BERT_INPUTS = ("6 input tensors per micro-batch, each a stream copy of its own (PopART's BERT feeds 7: indices, "
                "positions, segments, two mask indices, the masked-LM and next-sentence labels; its pretraining configs "
                "leave group_host_syncs off), the losses transformers' masked-LM and next-sentence cross-entropies")

_GC_RN50 = ("Graphcore's TensorFlow 1 ResNet-50 v1.5 (graphcore/examples, applications/tensorflow/cnns/training: "
            "README_Benchmarks.md's IPU-POD16 command, configs.yml): one IPU per replica, fp16 weights and arithmetic "
            "(16.16), the forward recomputed in the backward from checkpoints (enable_recomputation with pipeline "
            "splits on one IPU: modelled as full recomputation); poprun feeds the replicas from 8 host processes with "
            "8-bit images normalised on the IPU (eight_bit_io, fused_preprocessing), which accelkit's one-host "
            "stream model (IPU_HOST_STREAM_BPS) does not describe: the inputs are taken as made on the device, so the "
            "row checks the IPUs' training step, not the hosts'")

_DLE_PRETRAIN = ("NVIDIA's run_pretraining.py scripts the model with TorchScript and turns on the NVFuser fusions "
                 "(torch.jit.script unless --disable_jit_fusions; no CUDA graphs unless --cuda_graphs): modelled as the "
                 "'compiled' stack (fused elementwise kernels); one GPU, so native AMP autocast over fp32 weights for "
                 "fp16; the LAMB step once per accumulated batch; the model computes attention op by op "
                 "(modeling.py), and its masked-LM head runs over every token here (NVIDIA's only over the masked "
                 "ones: a few % more work modelled)")
_DLE_EFFNET_INFER = ("NVIDIA's ConvNets recipe runs inference in eager PyTorch (model.eval(), no TorchScript): the "
                     "'eager' stack; transformers' EfficientNet-B0 (the same blocks: depthwise convolutions, "
                     "squeeze-and-excitation, SiLU); TF32 on NCHW images; a row whose latency is at least twice the "
                     "batch-1 latency of its table, so that the GPU, not the host's issue of the ops, sets it "
                     "(the 2021 container's PyTorch 1.9 issued ops more slowly than the PyTorch the host model "
                     "is set on)")
_MLPERF_RESNET = ("NVIDIA's MLPerf submission runs a TensorRT engine (int8 convolutions with batch norm folded in and "
                  "the ReLU and residual add fused, channels-last int8 layouts): the 'engine' stack at int8; the "
                  "Offline scenario's batches of 2048 images, already preprocessed and, on the A100, already in the "
                  "GPU's memory (start_from_device), so the host link is not the bound; the harness's own host "
                  "work is not modelled")
_DLE_SQUAD = ("NVIDIA's run_squad.py runs eager PyTorch (no TorchScript, no CUDA graphs) with apex AMP O2 for fp16 "
              "(an fp16 model with fp32 master weights, FusedAdam): the 'eager' stack; attention computed op by op "
              "(modeling.py); throughput over the whole loop, host included")


def _graphcore_bert_split(first: int, per_ipu: int) -> dict[str, int]:
    """Where Graphcore's PopART BERT puts its layers over a 4-IPU pipeline (graphcore/examples nlp/bert/popart,
    bert_model.py: ``layers_per_ipu``; the embedding on IPU 0 with the first ``first`` layers, ``per_ipu`` layers on
    each IPU after it, the pooler (NSP) and the masked-LM head, which shares the embedding's weights, back on IPU
    0), as ``ak.compile(stages=...)`` takes it."""
    starts = {f"bert.encoder.layer.{first + i * per_ipu}": i + 1 for i in range(3)}
    return {**starts, "bert.pooler": 0, "cls": 0}


_CS3_TRAIN = ("ALCF's Cerebras CS-3 cluster running the Model Zoo (Release 2.10) with cszoo fit on one CSX: its "
              "installation 'supports Weight Streaming execution for models being pre-trained or fine-tuned' (ALCF, "
              "docs/ai-testbed/cerebras/index.md), so mode='weight-streaming'; the config's global batch, with the "
              "micro-batch left to the compiler (the Model Zoo's micro_batch_size 'auto', as accelkit's wafer compile "
              "picks it); cbfloat16 modelled as bf16; AdamW; samples/s = the log's training rate, the appliance's "
              "input workers and host included")


def _cs3_train(model: str, inputs: tuple[int, ...], more: str = "") -> Case:
    return Case(model, "train", {"target": "wse3", "chips": 1, "precision": "bf16", "mode": "weight-streaming",
                                 "optimizer": "adamw"}, inputs=inputs, assumption=_CS3_TRAIN + more,
                feeds=() if len(inputs) == 4 else ("labels",))


def _dle(model: str, call: str, precision: str, stack: str, inputs: tuple[int, ...], assumption: str,
         **kw: Any) -> Case:
    return Case(model, call, {"target": "a100", "chips": 1, "precision": precision, "stack": stack, **kw},
                inputs=inputs, assumption=assumption)


CASES: dict[str, Case] = {
    "cs3-llama31-8b": _serve("llama3-8b", "wse3", 1, 1, 128, 512, _SHORT_LONG),
    "groq576-llama2-70b": _serve(
        "llama2-70b", "tsp", 576, 1, 128, 512,
        _SHORT_LONG + "; 576 chips of 231 MB only hold 70 B weights at 8 bits (fp16 needs ~765 chips), "
        "so int8 weights are modelled: the row's fp16 is unconfirmed", precision="int8"),
    "sn40l8-llama3-8b-128-b1": _serve("llama3-8b", "sn40l", 8, 1, 128, 128, _SN40L_SPLIT),
    "sn40l8-llama3-8b-128-b16": _serve("llama3-8b", "sn40l", 8, 16, 128, 128, _SN40L_SPLIT),
    "sn40l8-llama3-70b-128-b1": _serve("llama3-70b", "sn40l", 8, 1, 128, 128, _SN40L_SPLIT),
    "a100x1-llama3-8b-128-b1": _serve("llama3-8b", "a100-40gb", 1, 1, 128, 128, _POLARIS, precision="fp16"),
    "a100x1-llama3-8b-128-b64": _serve("llama3-8b", "a100-40gb", 1, 64, 128, 128, _POLARIS, precision="fp16"),
    "h100x4-llama3-70b-128-b1": _serve("llama3-70b", "h100", 4, 1, 128, 128, _TRT, precision="fp16",
                                       parallel=Parallel(tensor=4)),
    "a100x8-gpt22b-tp8-full": Case(
        "gpt-22b", "train", {"target": "a100", "chips": 8, "parallel": Parallel(tensor=8), "recompute": "full",
                             "precision": "bf16", "stack": "compiled"}, inputs=(4, 2048),
        assumption="one iteration = forward, backward (with the forward run again) and an Adam step "
                   "for a global batch of 4 sequences of 2048 tokens; Megatron-LM's fused kernels: the "
                   "'compiled' stack"),
    "a100x8-gpt22b-tp8-selective": Case(
        "gpt-22b", "train", {"target": "a100", "chips": 8, "parallel": Parallel(tensor=8),
                             "recompute": "selective", "precision": "bf16", "stack": "compiled"},
        inputs=(4, 2048),
        assumption="sequence parallelism: its all-gathers and reduce-scatters move the same bytes as tensor "
                   "parallel's all-reduces, and each GPU moves an eighth of every activation (as a tensor-parallel "
                   "training step does in accelkit); selective recompute re-runs the memory-bound forward kernels "
                   "inside backward"),
    "bow16-bert-large-ph1": Case(
        "bert-large", "train", {"target": "bow", "chips": 16, "parallel": Parallel(data=4, pipeline=4),
                                "batch_size": 54784, "micro_batch": 32, "precision": "fp16",
                                "recompute": "full", "stages": _graphcore_bert_split(3, 7)}, inputs=(32, 128),
        feeds=_BERT_FEEDS,
        assumption=_BERT_INPUTS + "; the packed run's config (graphcore/examples nlp/bert/popart/configs/packed/"
                   "packed_pretrain_large_128.json): 4 replicas of a 4-IPU pipeline (3, 7, 7 and 7 layers), "
                   "micro-batch 8 packs per replica (32 over the replicas), 1,712 micro-batches accumulated into "
                   "54,784 packs of 128 tokens, fp16 with fp16 partials, LAMB with its state off-chip (the "
                   "optimizer-offload mode), the forward recomputed in the pipeline's backward; each pack (up to 3 "
                   "sequences) is modelled as one sample of 128 tokens, and the modelled packs/s is multiplied by "
                   "the packed Wikipedia set's 1.17 sequences a pack at 128 tokens (graphcore/examples nlp/bert/"
                   "pytorch/configs_pretraining.yml: packing_factor {128: 1.17, 384: 1.7, 512: 2.0}, the factor "
                   "Graphcore's application divides its gradient accumulation by) to compare with the row's "
                   "sequences/s; its masked-LM head runs over the 20 masked tokens of each sequence, accelkit's "
                   "(transformers') over all 128: about 8% more work modelled",
        items_per_sample=1.17),
    "bow16-bert-base-ph1": Case(
        "bert-base-graphcore", "train", {"target": "bow", "chips": 16, "parallel": Parallel(data=4, pipeline=4),
                                         "batch_size": 65536, "micro_batch": 128, "precision": "fp16",
                                         "recompute": "full", "stages": _graphcore_bert_split(0, 4)},
        inputs=(32, 128), feeds=_BERT_FEEDS,
        assumption=_BERT_INPUTS + "; the run's config (graphcore/examples nlp/bert/popart/configs/"
                   "pretrain_base_128.json): 4 replicas "
                   "of a 4-IPU pipeline (the embedding on the first IPU, 4 layers on each of the others), micro-batch "
                   "32 per replica (128 over the replicas), 512 micro-batches accumulated into 65,536 sequences of 128 "
                   "tokens, fp16 with fp16 partials, LAMB with its state off-chip, the forward recomputed in the "
                   "pipeline's backward; its masked-LM head runs over the 20 masked tokens of each sequence, "
                   "accelkit's (transformers') over all 128: about a fifth more work modelled for this model, so with "
                   "the run's work the model would read faster than this row shows"),
    "bow16-gpt2-small-train": Case(
        "gpt2-small", "train", {"target": "bow", "chips": 16, "parallel": Parallel(data=4, pipeline=4),
                                "batch_size": 8192, "micro_batch": 4, "precision": "fp16", "recompute": "full",
                                "device_iterations": 8,
                                "stages": {"transformer.h.0": 1, "transformer.h.4": 2, "transformer.h.8": 3,
                                           "lm_head": 0}},
        inputs=(1, 1024), feeds=("labels",),
        assumption="the ALCF run of Graphcore's PopTorch GPT-2 (train_gpt2.py): 4 replicas of a 4-IPU pipeline as "
                   "its --layers-per-ipu 0 4 4 4 places it (the embedding and the tied LM head on IPU 0, 4 layers on "
                   "each other IPU: its BeginBlocks), micro-batch 1 of 1,024 tokens, 2,048 micro-batches accumulated "
                   "per replica (8,192 sequences a step), 8 steps a call, fp16 with half partials, AdamW, every layer "
                   "recomputed in the backward; each micro-batch's input_ids and labels (its "
                   "poptorch_model(input_ids=..., labels=...)) two stream copies, the loss transformers' cross-entropy; "
                   "not modelled: --matmul-proportion 0.15 (less memory for each "
                   "matmul's plan), the LM head serialized into 4 matmuls and its loss over the sequence in pieces "
                   "(--embedding-serialization-factor, --enable-sequence-serialized), the optimizer state sharded "
                   "over the replicas (--replicated-tensor-sharding); the generated data is made on the host and "
                   "crosses the host link as real data would"),
    "a100x1-resnet50-train-amp": Case(
        "resnet50", "train", {"target": "a100", "chips": 1, "precision": "fp16", "stack": "eager",
                              "batch_size": 256, "optimizer": "sgd"}, inputs=(1, 3, 224, 224),
        assumption="NVIDIA's PyTorch recipe runs eager PyTorch with native AMP (fp16 autocast over fp32 weights), "
                   "batch 256 per GPU, SGD with momentum; DALI feeds the images, so the input pipeline is not the "
                   "bound; transformers' ResNet-50 has torchvision's layers"),
    "a100x1-resnet50-train-tf32": Case(
        "resnet50", "train", {"target": "a100", "chips": 1, "precision": "tf32", "stack": "eager",
                              "batch_size": 256, "optimizer": "sgd"}, inputs=(1, 3, 224, 224),
        assumption="the same recipe in TF32: fp32 weights and activations, matmuls and convolutions on the tensor "
                   "cores at the TF32 rate; batch 256 per GPU"),
    # Graphcore's ResNet-50 training at scale: a dataflow chip's published training throughput
    "bow16-resnet50-train": Case(
        "resnet50", "train", {"target": "bow", "chips": 16, "parallel": Parallel(data=16), "precision": "fp16",
                              "batch_size": 1920, "micro_batch": 320, "recompute": "full", "synthetic_data": True,
                              "optimizer": "sgd"},
        inputs=(1, 3, 224, 224), assumption=_GC_RN50 + "; the performance page's run: config "
        "mk2_resnet50_mlperf_pod16_bs20 (16 replicas of one IPU, micro-batch 20, 6 micro-batches accumulated: 1,920 "
        "images a step, SGD with momentum)"),
    "gc200x16-resnet50-train-mlperf": Case(
        "resnet50", "train", {"target": "gc200", "chips": 16, "parallel": Parallel(data=16), "precision": "fp16",
                              "batch_size": 3200, "micro_batch": 320, "recompute": "full", "synthetic_data": True,
                              "optimizer": "sgd"},
        inputs=(1, 3, 224, 224), assumption=_GC_RN50 + "; the MLPerf v1.1 run: config "
        "mk2_resnet50_mlperf_pod16_lars (16 replicas of one IPU, micro-batch 20, 10 micro-batches accumulated: 3,200 "
        "images a step, LARS: SGD's momentum per weight plus a norm per layer, modelled as SGD with momentum); '30k "
        "images per second' is the blog's rounding"),
    "tsp1-resnet50-b1": Case(
        "resnet50", "infer", {"target": "tsp", "chips": 1, "precision": "int8", "device_iterations": 1000},
        inputs=(1, 3, 224, 224),
        assumption="int8 weights and activations, batch 1, 224 x 224 images; the paper's figure is images per "
                   "second at batch 1 over a stream of images: each image's bytes still cross PCIe one after another "
                   "with the chip's work, but the host's round trip is not paid per image (modelled as "
                   "device_iterations=1000)"),
    "trn1x16-bert-large-ph1": Case(
        "bert-large", "train", {"target": "trn1", "chips": 16, "parallel": Parallel(data=16), "batch_size": 16384,
                                "micro_batch": 512, "precision": "fp32"}, inputs=(32, 128),
        assumption=_NEURON_DP + "; one trn1.32xlarge: 16 chips, each running 2 NeuronCores x micro-batch 16 = 32 "
                   "sequences of 128 tokens at a time, gradients accumulated to the global batch of 16,384; "
                   "AWS's BF16 autocast with stochastic rounding is modelled as bf16"),
    "inf2x1-bert-base-b4": Case(
        "bert-base-cased", "infer", {"target": "inf2", "chips": 1, "precision": "fp32"}, inputs=(8, 128),
        assumption=_NEURON_DP + "; the benchmark's batch 4 runs on each of the chip's 2 NeuronCores, so 8 "
                   "sequences of 128 tokens per chip; the FP32 model's matmuls run at the BF16 rate "
                   "(neuronx-cc's default autocast, NEURON_AUTOCAST)"),
    "inf2x1-bert-large-b4": Case(
        "bert-large-uncased", "infer", {"target": "inf2", "chips": 1, "precision": "fp32"}, inputs=(8, 128),
        assumption=_NEURON_DP + "; the benchmark's batch 4 runs on each of the chip's 2 NeuronCores, so 8 "
                   "sequences of 128 tokens per chip; the FP32 model's matmuls run at the BF16 rate "
                   "(neuronx-cc's default autocast, NEURON_AUTOCAST)"),
    "tpuv4x4-llama-7b-b1": _serve("llama-7b", "tpu-v4", 4, 1, 256, 256, _LLAMA_V4, parallel=Parallel(tensor=4)),
    "tpuv5ex4-llama2-7b-b1": _serve(
        "llama-7b", "tpu-v5e", 4, 1, 128, 128,
        "the blog writes '1.2ms / token (i.e. 201 tokens / second / chip)': read as 201 tokens/s for the one "
        "sequence (4.97 ms per token, which the blog divides by its 4 chips to get 1.2 ms); the other reading, "
        "804 tokens/s, would read the 13.5 GB of bf16 weights 804 times a second (10.9 TB/s), 3.3x the 4 chips' "
        "3.3 TB/s of HBM; max_seq_len 256 taken as 128 tokens in, 128 out; " + _PT_XLA_TP,
        parallel=Parallel(tensor=4)),
    "gaudi3x1-llama31-8b-128-b1536": _serve("llama3-8b", "gaudi3", 1, 1536, 128, 128, _OH_FP8, precision="fp8"),
    "gaudi3x8-llama31-70b-128-b4000": _serve(
        "llama3-70b", "gaudi3", 8, 4000, 128, 128,
        _OH_FP8 + "; DeepSpeed's tensor parallelism (gaudi_spawn.py --use_deepspeed --world_size 8) shards each layer "
        "over the 8 cards, every card running the whole batch: modelled as Parallel(tensor=8) (8 data-parallel copies "
        "of the 71 GB of fp8 weights, ak.serve's own pick, would be modelled faster still)",
        precision="fp8", parallel=Parallel(tensor=8)),
    # the vendors' small models, where a step is short enough for the host's share to show
    "gc200x1-data-loading-synthetic": Case(
        "graphcore-data-loading-net", "train",
        {"target": "gc200", "chips": 1, "precision": "fp32", "device_iterations": 50, "synthetic_data": True,
         "optimizer": "sgd"}, inputs=(16, 1, 128, 128),
        assumption=_GC_DATA_LOADING + "; enableSyntheticData(True): no input crosses the host link, the call's round "
                   "trip remains; this figure sets IPU_OP_FLOOR_S (the length of one op's program), so it is shown, "
                   "not counted",
        sets="IPU_OP_FLOOR_S"),
    "gc200x1-data-loading-real": Case(
        "graphcore-data-loading-net", "train",
        {"target": "gc200", "chips": 1, "precision": "fp32", "device_iterations": 50, "input_rate": 37710.0,
         "optimizer": "sgd"}, inputs=(16, 1, 128, 128),
        assumption=_GC_DATA_LOADING + "; real data: every iteration's 16 images and their labels cross the host "
                   "link, a stream copy each; the asynchronous "
                   "DataLoader delivers 37,710 items/s on its own (measured by the same run: input_rate) while the "
                   "IPU computes"),
    "gc200x2-data-loading-synthetic": Case(
        "graphcore-data-loading-net", "train",
        {"target": "gc200", "chips": 2, "parallel": Parallel(data=2), "precision": "fp32", "device_iterations": 50,
         "synthetic_data": True, "optimizer": "sgd"}, inputs=(32, 1, 128, 128),
        assumption=_GC_DATA_LOADING.replace("1 replica", "2 replicas (replicationFactor 2: one copy of the model per "
                                            "IPU, gradients all-reduced every step)").replace("800 items", "1,600 items")
        + "; enableSyntheticData(True): no input crosses the host link, the call's round trip remains"),
    "gc200x2-data-loading-real": Case(
        "graphcore-data-loading-net", "train",
        {"target": "gc200", "chips": 2, "parallel": Parallel(data=2), "precision": "fp32", "device_iterations": 50,
         "input_rate": 42604.88, "optimizer": "sgd"},
        inputs=(32, 1, 128, 128),
        assumption=_GC_DATA_LOADING.replace("1 replica", "2 replicas (replicationFactor 2: one copy of the model per "
                                            "IPU, gradients all-reduced every step)").replace("800 items", "1,600 items")
        + "; real data: every iteration's 16 images per replica and their labels cross the host link, a stream copy "
        "each; the asynchronous DataLoader "
        "delivers 42,605 items/s on its own (measured by the same run: input_rate) while the IPUs compute"),
    "bow1-mnist-poptorch": Case(
        "graphcore-mnist-net", "train",
        {"target": "bow", "chips": 1, "precision": "fp32", "device_iterations": 50, "output_mode": "all",
         "input_overlap": False, "optimizer": "sgd-plain"}, inputs=(8, 1, 28, 28),
        assumption="Graphcore's MNIST tutorial as ALCF runs it (srun --ipus=1 on the Bow-Pod64): trainingModel with plain SGD (no momentum), "
                   "batch 8, deviceIterations 50 (400 images per call), fp32, outputMode All (every batch's predictions "
                   "and loss come back: two stream copies to the host each step, beside the images' and labels' two in); images/s = the 60,000 training images "
                   "over an epoch's wall time, host included: tqdm's 7.71 s per epoch is the 10 epochs' 77 s (ALCF's "
                   "output shows PopTorch's 'Graph compilation' bar done in 00:00, a cached executable, so no compile "
                   "is in it); poptorch.DataLoader has no workers, so every call's 400 images are read, made PIL images, "
                   "ToTensor'd and Normalize'd in the training process before the call (input_overlap=False), at the "
                   "rate MEASURED on this host for the same pipeline over accelkit's digits (ALCF's host CPU is another "
                   "one); the loss mean and accuracy the loop computes after each call are not modelled",
        measured={"input_rate": _mnist_pipeline_rate}),
    "gc200x4-pipelined-mnist": Case(
        "graphcore-pipelined-mnist-net", "train",
        {"target": "gc200", "chips": 4, "precision": "fp32", "batch_size": 400, "micro_batch": 40,
         "device_iterations": 10, "output_mode": "all", "optimizer": "adamw", "mode": "optimizer-offload",
         "stages": {"layer1": 0, "layer2": 1, "layer3": 2, "layer4": 3}}, inputs=(40, 1, 28, 28),
        assumption="Graphcore's PopTorch pipelining tutorial as its README runs it (SDK 3.0): the four blocks B1-B4 on "
                   "IPUs 0-3 (PipelinedExecution), micro-batch 40, gradientAccumulation 10, deviceIterations 10 (4,000 "
                   "images a call), fp32, AdamW with its state off chip (TensorLocations: useOnChipStorage(False)), "
                   "outputMode All (every micro-batch's predictions and loss come back); on an IPU-POD's GC200s, as the "
                   "tutorials' other runs; images/s = tqdm's rate in epochs 2 and 3 (15.04 and 14.89 calls/s) x 4,000; "
                   "the asynchronous DataLoader's 16 workers keep up (not modelled as a bound); the loss mean and "
                   "accuracy the loop computes after each call are not modelled"),
    "tsp1-groqflow-hello-world": Case(
        "linear-10-5", "infer", {"target": "tsp", "chips": 1, "precision": "fp16"}, inputs=(10,),
        assumption="GroqFlow's hello_world example: a Linear(10, 5) on one input of 10 values (one sample); GroqFlow "
                   "builds in fp16; the figure is GroqFlow's own estimate_performance() formula (compute cycles plus "
                   "PCIe latency and bytes each way), not a measurement"),
    # training runs published for a dataflow chip: ALCF's CS-3 sample outputs (the Model Zoo's own configs)
    "cs3x1-gptj-6b-train": _cs3_train("gptj-6b", (120, 2048)),
    "cs3x1-llama2-7b-train": _cs3_train("llama-7b", (1024, 4096)),
    "cs3x1-esm2-35m-train": _cs3_train("esm2-35m", (2048, 1026), "; its data's sequence length taken as the "
                                       "config's 1,026 positions (ALCF's modified config is not public)"),
    "cs3x1-vit-base-16-train": _cs3_train("vit-base-16", (2850, 3, 224, 224), "; samples/s: the mean of the two rates "
                                          "the log prints (its GlobalRate also counts the hour the input workers took "
                                          "to start streaming ImageNet)"),
    # published GPU-like rows: NVIDIA's DeepLearningExamples tables (A100 80 GB) and Intel's Gaudi pages
    "a100x1-bert-large-ph1-amp": _dle("bert-large-nvidia", "train", "fp16", "compiled", (256, 128), _DLE_PRETRAIN,
                                      batch_size=8192, micro_batch=256),
    "a100x1-bert-large-ph1-tf32": _dle("bert-large-nvidia", "train", "tf32", "compiled", (128, 128), _DLE_PRETRAIN,
                                       batch_size=8192, micro_batch=128),
    "a100x1-bert-large-ph2-amp": _dle("bert-large-nvidia", "train", "fp16", "compiled", (32, 512), _DLE_PRETRAIN,
                                      batch_size=4096, micro_batch=32),
    "a100x1-bert-large-ph2-tf32": _dle("bert-large-nvidia", "train", "tf32", "compiled", (16, 512), _DLE_PRETRAIN,
                                       batch_size=4096, micro_batch=16),
    "a100x1-bert-large-squad-train-amp": _dle("bert-large-squad-nvidia", "train", "fp16", "eager", (32, 384),
                                              _DLE_SQUAD),
    "a100x1-bert-large-squad-train-tf32": _dle("bert-large-squad-nvidia", "train", "tf32", "eager", (32, 384),
                                               _DLE_SQUAD),
    "a100x1-bert-large-squad-infer-amp": _dle("bert-large-squad-nvidia", "infer", "fp16", "eager", (32, 384),
                                              _DLE_SQUAD + "; inference runs the model in fp16 (model.half())"),
    "a100x1-bert-large-squad-infer-tf32": _dle("bert-large-squad-nvidia", "infer", "tf32", "eager", (32, 384),
                                               _DLE_SQUAD),
    **{f"a100x1-efficientnet-b0-infer-tf32-b{b}": _dle(
        "efficientnet-b0", "infer", "tf32", "eager", (b, 3, 224, 224), _DLE_EFFNET_INFER) for b in (64, 128, 256)},
    "a100x1-efficientnet-b0-infer-amp-b256": replace(_dle(
        "efficientnet-b0", "infer", "fp16", "eager", (256, 3, 224, 224),
        _DLE_EFFNET_INFER + "; mixed precision: native AMP (fp16 autocast over fp32 weights) on channels-last images "
        "(the recipe's memory_format nhwc)"), channels_last=True),
    "a100x1-efficientnet-b0-train-tf32": _dle(
        "efficientnet-b0-train", "train", "tf32", "eager", (256, 3, 224, 224),
        "NVIDIA's ConvNets recipe trains eager PyTorch: the 'eager' stack; TF32 on NCHW images (the recipe sets "
        "memory_format nhwc for AMP only), batch 256, RMSprop with momentum (the recipe's alpha 0.9, eps 0.01, "
        "momentum 0.9), label smoothing and mixup "
        "(elementwise work on a batch's labels: not modelled); its AMP row (2,489 img/s) is left out: it equals "
        "ResNet-50's 2,470 on the same recipe and platform with a tenth of the FLOPs an image, the mark of its input "
        "pipeline (10 loader workers decoding and augmenting JPEGs), which the table does not state",
        optimizer="rmsprop"),
    # MLPerf Inference: the same network as NVIDIA's engine serves it offline, on two GPU generations
    **{f"{gpu}x1-resnet50-mlperf-offline": replace(Case(
        "resnet50", "infer", {"target": gpu, "chips": 1, "precision": "int8", "stack": "engine"},
        inputs=(2048, 3, 224, 224), assumption=_MLPERF_RESNET + more), channels_last=True)
       for gpu, more in (("a100", ""), ("h100", "; the H100's batch is not in the published configs: the A100's "
                                                 "2048 is assumed"))},
    "a100x1-bert-large-trt-b16": _dle(
        "bert-large-squad", "infer", "fp16", "engine", (16, 384),
        "TensorRT's engine (fused kernels, fused multi-head attention) under Triton: the 'engine' stack; Triton's "
        "client round trip is in the figure (0.1 ms of network and queue per batch of 29 ms) and not modelled"),
    "gaudi2x1-llama31-8b-128-b2429": _serve("llama3-8b", "gaudi2", 1, 2429, 128, 128, _OH_FP8_GAUDI2,
        precision="fp8"),
    "gaudi2x1-llama2-7b-128-b1230": _serve("llama-7b", "gaudi2", 1, 1230, 128, 128, _OH_FP8_GAUDI2,
        precision="fp8"),
    "gaudi2x2-llama2-70b-128-b1750": _serve(
        "llama2-70b", "gaudi2", 2, 1750, 128, 128,
        _OH_FP8_GAUDI2 + "; DeepSpeed's tensor parallelism over the 2 cards: modelled as Parallel(tensor=2)",
        precision="fp8", parallel=Parallel(tensor=2)),
    "gaudi3x1-llama2-7b-128-b1536": _serve("llama-7b", "gaudi3", 1, 1536, 128, 128, _OH_FP8, precision="fp8"),
    "gaudi3x2-llama31-70b-128-b3516": _serve(
        "llama3-70b", "gaudi3", 2, 3516, 128, 128,
        _OH_FP8 + "; DeepSpeed's tensor parallelism over the 2 cards: modelled as Parallel(tensor=2)",
        precision="fp8", parallel=Parallel(tensor=2)),
    # informational rows: published figures beyond a weights-from-memory bound (not counted)
    "sambanova-cloud-llama31-70b": _serve(
        "llama3-70b", "sn40l", 16, 1, 128, 512,
        "16 sockets is the row's own assumption (one SN40L node); " + _SHORT_LONG),
    "sambanova-cloud-llama31-405b": _serve(
        "llama31-405b", "sn40l", 16, 1, 128, 512,
        "16 sockets is the row's own assumption (one SN40L node); " + _SHORT_LONG),
}


# Intel's throughput tables list each model at four lengths (128 or 2,048 tokens in, 128 or 2,048 out), each with the
# batch Intel ran; the rows at 128 in and 128 out have their own cases above (their names are kept)
_INTEL_LENGTHS: tuple[tuple[str, int, str, str, int, int, int], ...] = (
    ("gaudi2", 1, "llama-7b", "llama2-7b", 163, 128, 2048),
    ("gaudi2", 1, "llama-7b", "llama2-7b", 94, 2048, 128),
    ("gaudi2", 1, "llama-7b", "llama2-7b", 81, 2048, 2048),
    ("gaudi2", 4, "llama2-70b", "llama2-70b", 327, 128, 2048),
    ("gaudi2", 2, "llama2-70b", "llama2-70b", 95, 2048, 128),
    ("gaudi2", 2, "llama2-70b", "llama2-70b", 78, 2048, 2048),
    ("gaudi2", 1, "mistral-7b", "mistral-7b", 896, 128, 128),
    ("gaudi2", 1, "mistral-7b", "mistral-7b", 120, 128, 2048),
    ("gaudi2", 1, "mistral-7b", "mistral-7b", 120, 2048, 128),
    ("gaudi2", 1, "mistral-7b", "mistral-7b", 44, 2048, 2048),
    ("gaudi2", 1, "llama3-8b", "llama31-8b", 289, 128, 2048),
    ("gaudi2", 1, "llama3-8b", "llama31-8b", 179, 2048, 128),
    ("gaudi2", 1, "llama3-8b", "llama31-8b", 155, 2048, 2048),
    ("gaudi3", 1, "llama-7b", "llama2-7b", 217, 128, 2048),
    ("gaudi3", 1, "llama-7b", "llama2-7b", 153, 2048, 128),
    ("gaudi3", 1, "llama-7b", "llama2-7b", 75, 2048, 2048),
    ("gaudi3", 2, "llama2-70b", "llama2-70b", 1750, 128, 128),
    ("gaudi3", 2, "llama2-70b", "llama2-70b", 512, 128, 2048),
    ("gaudi3", 2, "llama2-70b", "llama2-70b", 231, 2048, 128),
    ("gaudi3", 2, "llama2-70b", "llama2-70b", 240, 2048, 2048),
    ("gaudi3", 1, "llama3-8b", "llama31-8b", 768, 128, 2048),
    ("gaudi3", 1, "llama3-8b", "llama31-8b", 256, 2048, 128),
    ("gaudi3", 1, "llama3-8b", "llama31-8b", 364, 2048, 2048),
    ("gaudi3", 2, "llama3-70b", "llama31-70b", 450, 128, 2048),
    ("gaudi3", 2, "llama3-70b", "llama31-70b", 223, 2048, 128),
    ("gaudi3", 2, "llama3-70b", "llama31-70b", 175, 2048, 2048),
    ("gaudi3", 8, "llama3-70b", "llama31-70b", 600, 128, 2048),
    ("gaudi3", 8, "llama3-70b", "llama31-70b", 400, 2048, 128),
    ("gaudi3", 8, "llama3-70b", "llama31-70b", 600, 2048, 2048),
    ("gaudi3", 1, "mistral-7b", "mistral-7b", 896, 128, 128),
    ("gaudi3", 1, "mistral-7b", "mistral-7b", 120, 128, 2048),
    ("gaudi3", 1, "mistral-7b", "mistral-7b", 120, 2048, 128),
    ("gaudi3", 1, "mistral-7b", "mistral-7b", 44, 2048, 2048),
)


_MEGATRON_GAUDI = ("Intel's Megatron pretraining of Llama 2 (HabanaAI/Megatron-LM, examples/llama/pretrain_llama.sh, "
                   "and Intel's Gaudi tutorial 'Pretraining of Llama2-7B using FP8 on the Intel Gaudi 2'): lazy mode (the "
                   "'lazy' stack), "
                   "FP8 matmuls through Intel's Transformer Engine (accelkit runs every matmul in fp8; the script "
                   "keeps the MLP's row-parallel projection in bf16), selective recompute (HL_CKP_ACT=2), micro-batch "
                   "1 per replica (the script's default) accumulated to the global batch, fused SDPA, the distributed "
                   "optimizer (USE_DISTRIBUTED_OPTIMIZER=1: its fp32 state sharded over the data-parallel replicas, "
                   "Parallel(zero=1)); tokens/s = "
                   "global batch x 4,096 over the step; the split TP, PP, DP is Intel's 1.17 table's (the 1.18 table "
                   "names none)")


def _intel_train(model: str, chips: int, parallel: Parallel, batch: int) -> Case:
    return Case(model, "train", {"target": "gaudi2", "chips": chips, "parallel": parallel, "precision": "fp8",
                                 "stack": "lazy", "recompute": "selective", "micro_batch": parallel.data, "optimizer": "adamw"},
                inputs=(batch, 4096), assumption=_MEGATRON_GAUDI + f"; {parallel.split()}")


CASES.update({
    # LLM pretraining on Gaudi 2 (Intel's 'Model Performance Data for Intel Gaudi 2 AI Accelerators', training)
    "gaudi2x8-llama2-7b-train-fp8": _intel_train("llama-7b", 8, Parallel(data=8, zero=1), 1024),
    "gaudi2x16-llama2-13b-train-fp8": _intel_train("llama2-13b", 16, Parallel(data=4, tensor=2, pipeline=2, zero=1), 256),
    "gaudi2x64-llama2-70b-train-fp8": _intel_train("llama2-70b", 64, Parallel(data=4, tensor=8, pipeline=2, zero=1), 1024),
})


_MAXTEXT_V5E = ("Google's MaxText on one TPU v5e-256 slice (configs/v5e/{n}b.sh): JAX / XLA (the 'xla' stack), "
                "FSDP over all 256 chips (ici_fsdp_parallelism -1: Parallel(data=256, zero=3)), per_device_batch_size "
                "{b}, 2,048 tokens, remat_policy=full (recompute='full'), fp32 weights with bf16 compute (MaxText's "
                "weight_dtype and dtype), flash attention, AdamW; the published TFLOP/s per chip turned into a step "
                "time with MaxText's own FLOP count (maxtext_step_flops); XLA overlaps the FSDP all-gathers with "
                "compute (its async collective flags), accelkit adds them after it")


def _maxtext_case(scale: int, per_device_batch: int, sets: str = "") -> Case:
    return Case(f"maxtext-{scale}b", "train", {
        "target": "tpu-v5e", "chips": 256, "parallel": Parallel(data=256, zero=3), "precision": "bf16",
        "stack": "xla", "recompute": "full", "micro_batch": 256 * per_device_batch, "optimizer": "adamw"},
        inputs=(256 * per_device_batch, 2048), assumption=_MAXTEXT_V5E.format(n=scale, b=per_device_batch), sets=sets)


CASES.update({
    # LLM pretraining on Cloud TPU v5e (Google's MaxText, its v5e configs' README)
    "tpuv5ex256-maxtext-16b-train": _maxtext_case(16, 6),
    "tpuv5ex256-maxtext-32b-train": _maxtext_case(32, 4, sets="TPU_MATMUL_EFFICIENCY"),
})


def _intel(target: str, chips: int, model: str, batch: int, prompt: int, output: int) -> Case:
    said = _OH_FP8_GAUDI2 if target == "gaudi2" else _OH_FP8
    if chips > 1:
        return _serve(model, target, chips, batch, prompt, output,
                      said + f"; DeepSpeed's tensor parallelism over the {chips} cards: modelled as "
                      f"Parallel(tensor={chips})", precision="fp8", parallel=Parallel(tensor=chips))
    return _serve(model, target, chips, batch, prompt, output, said, precision="fp8")


CASES.update({f"{t}x{c}-{slug}-{i}-{o}-b{b}": _intel(t, c, model, b, i, o)
              for t, c, model, slug, b, i, o in _INTEL_LENGTHS})
"""Case name (the CSV's ``case`` column) -> how accelkit runs it."""

METRICS: dict[str, tuple[str, str]] = {
    # CSV metric: (attribute read from accelkit's result, unit)
    "tokens_per_s_per_user": ("tokens_per_s_per_user", "tokens/s"),
    "latency_s": ("latency_s", "s"),
    "seconds_per_iteration": ("step_time_s", "s"),
    "sequences_per_s": ("throughput", "seq/s"),
    "images_per_s": ("throughput", "img/s"),
    "items_per_s": ("throughput", "items/s"),
    "inferences_per_s": ("throughput", "IPS"),
    "tpot_s": ("tpot_s", "s"),  # time per output token (per-token latency), one sequence's view
    "output_tokens_per_s": ("end_to_end_tokens_per_s", "tokens/s"),  # the batch's output tokens over its whole run
    "samples_per_s": ("throughput", "samples/s"),
    "tokens_per_s": ("tokens_per_s", "tokens/s"),  # a training step's tokens (batch x sequence) over its time
}


# ---------------------------------------------------------------------------------------------
# the reference rows
# ---------------------------------------------------------------------------------------------
def reference_rows(use: str | None = None, path: str | Path = REFERENCE_CSV) -> list[dict[str, str]]:
    """The published results as dicts of strings (CSV columns), optionally only ``use`` ones."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if use is None or r["use"] == use]


def _leading_int(text: str) -> int | None:
    head = text.strip().split(" ")[0]
    return int(head) if head.isdigit() else None


def check_cases(rows: list[dict[str, str]] | None = None) -> list[str]:
    """Where the case mapping and the reference rows disagree (an empty list when they agree).

    Every row needs a case; every figure the row states (chips, batch, prompt and output tokens,
    precision) must match the case's arguments unless the row marks it open ("short", "large",
    "unconfirmed", "assumed") and the case says how it was filled in.
    """
    rows = reference_rows() if rows is None else rows
    problems = []
    for row in rows:
        name = row["case"]
        case = CASES.get(name)
        if case is None:
            problems.append(f"{name}: no case in accelkit.sim.validate.CASES")
            continue
        if row["metric"] not in METRICS:
            problems.append(f"{name}: metric {row['metric']!r} has no reader in METRICS")
        batch = case.kwargs.get("batch") if case.call == "serve" else (case.inputs or (None,))[0]
        if case.call == "infer" and case.inputs is not None and len(case.inputs) == 1:
            batch = 1  # a 1-D input is one sample
        tokens = case.call == "infer" and case.inputs is not None and len(case.inputs) == 2  # (batch, sequence)
        prompt = case.kwargs.get("prompt_tokens") if case.call == "serve" else \
            (case.inputs or (0, None))[1] if case.call == "train" or tokens else None
        stated = {"chips": case.chips, "batch": batch, "prompt_tokens": prompt,
                  "output_tokens": case.kwargs.get("output_tokens"), "precision": case.precision}
        for column, ours in stated.items():
            text = row[column].strip()
            if not text:
                continue
            theirs: Any = text.split(" ")[0] if column == "precision" else _leading_int(text)
            open_ = theirs is None or any(w in text for w in ("unconfirmed", "assumed"))
            if column == "batch" and case.kwargs.get("batch_size"):
                ours = case.kwargs["batch_size"]
            if theirs != ours and not (open_ and case.assumption):
                problems.append(f"{name}: the row's {column} is {text!r}, the case uses {ours!r}"
                                + (" without an assumption" if open_ else ""))
    return problems


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValidationRow:
    """One published figure against accelkit's prediction (modelled)."""

    case: str
    system: str
    chips: int
    model: str
    metric: str
    published: float
    predicted: float
    error: float  # (predicted - published) / published
    source: str
    confidence: str
    assumption: str
    stack: str = ""  # the software stack the run was modelled on (as the report names it)
    sets: str = ""  # the constant derived from this row's figure (not a check of the model: not counted)

    @property
    def ratio(self) -> float:
        """max(predicted / published, published / predicted): 1 is exact, 2 is the goal's limit."""
        return max(self.predicted / self.published, self.published / self.predicted)

    @property
    def unit(self) -> str:
        return METRICS[self.metric][1]


@dataclass(frozen=True)
class InformationalRow:
    """A published serving figure beyond what weights read from memory allow: the bound and the gap."""

    case: str
    system: str
    chips: int
    model: str
    metric: str
    published: float  # tokens/s per user
    predicted: float  # accelkit's modelled decode rate
    bound: float  # weights read once per token at the tier's full peak bandwidth, all chips
    required_Bps: float  # weight reads per second the published figure needs
    available_Bps: float  # peak bandwidth of the tier holding the weights, all chips
    tier: str
    source: str
    confidence: str
    assumption: str

    @property
    def gap(self) -> float:
        """Published over predicted: how far the published figure is beyond accelkit's model."""
        return self.published / self.predicted


@dataclass
class ValidationResult:
    """Every validate row's published figure against the modelled one, and the informational rows."""

    rows: list[ValidationRow]
    informational: list[InformationalRow] = field(default_factory=list)
    seconds: float = 0.0
    bench: BenchValidation | None = None  # LLM-Inference-Bench's measured rows, per system
    gpu: MeasuredValidation | None = None  # timings measured on a real H100 (accelkit.sim.measured)
    # the vendors' small models (tutorials), where the host's share shows: reported with their own median, apart
    # from the goals above until the model of small kernels on the dataflow chips reaches them
    small: list[ValidationRow] = field(default_factory=list)
    # published per-accelerator training and inference throughputs of the GPU-like families (NVIDIA's
    # DeepLearningExamples tables, Intel's Gaudi pages): reported with their own median against the same goal
    gpu_like: list[ValidationRow] = field(default_factory=list)
    # training runs published for the dataflow chips (ALCF's CS-3 sample outputs): reported with their own median
    dataflow_training: list[ValidationRow] = field(default_factory=list)

    label = "modelled"
    goal_ratio = GOAL_MAX_RATIO

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(r.error) for r in self.rows) if self.rows else float("nan")

    @property
    def max_ratio(self) -> float:
        return max((r.ratio for r in self.rows), default=float("nan"))

    @property
    def small_counted(self) -> list[ValidationRow]:
        """The vendors' small-model rows that check the model: all but those whose figure set a constant."""
        return [r for r in self.small if not r.sets]

    @property
    def small_median_abs_error(self) -> float:
        """Median |error| of the small-model rows that set no constant (goal: ``SMALL_MODELS``, 15%); NaN when
        none ran."""
        counted = self.small_counted
        return statistics.median(abs(r.error) for r in counted) if counted else float("nan")

    @property
    def gpu_like_counted(self) -> list[ValidationRow]:
        """The GPU-like published rows that check the model: all but those whose figure set a constant."""
        return [r for r in self.gpu_like if not r.sets]

    @property
    def gpu_like_median_abs_error(self) -> float:
        """Median |error| of the GPU-like published rows that set no constant (goal: the same 15%); NaN when none
        ran."""
        counted = self.gpu_like_counted
        return statistics.median(abs(r.error) for r in counted) if counted else float("nan")

    @property
    def goals(self) -> dict[str, bool]:
        return {f"median |error| <= {GOAL_MEDIAN_ABS_ERROR:.0%}": self.median_abs_error <= GOAL_MEDIAN_ABS_ERROR,
                f"every case within {GOAL_MAX_RATIO:g}x": self.max_ratio <= GOAL_MAX_RATIO}

    @property
    def ok(self) -> bool:
        return all(self.goals.values())

    def table(self) -> str:
        """Both sections as fixed-width text (predictions are MODELLED, published figures as published)."""
        head = ("case", "metric", "published", "predicted", "error", "x")
        lines = [head] + [(r.case, r.metric, _num(r.published), _num(r.predicted), f"{r.error:+.0%}",
                           f"{r.ratio:.2f}") for r in self.rows]
        out = ["accelkit (MODELLED) against published results"]
        if self.rows or not (self.informational or self.small or self.gpu_like or self.dataflow_training):
            # (only the other tables ran: skip)
            out += [*columns(lines, right={2, 3, 4, 5}),
                    f"median |error| {self.median_abs_error:.0%} (goal <= {GOAL_MEDIAN_ABS_ERROR:.0%}); "
                    f"worst {self.max_ratio:.2f}x (goal <= {GOAL_MAX_RATIO:g}x): "
                    + ("goals met" if self.ok else "goal MISSED")]
        if self.informational:
            head2 = ("informational (not counted)", "published", "predicted", "bound", "gap", "needs", "has")
            lines2 = [head2] + [(r.case, _num(r.published), _num(r.predicted), _num(r.bound), f"{r.gap:.1f}x",
                                 f"{r.required_Bps / 1e12:.0f} TB/s", f"{r.available_Bps / 1e12:.1f} TB/s")
                                for r in self.informational]
            out += ["", *columns(lines2, right={1, 2, 3, 4, 5, 6}),
                    "bound: weights read once per token at the full peak bandwidth of the tier that holds them; "
                    "needs: weight reads per second the published figure implies"]
        if self.small:
            lines3 = [("vendors' small models", "metric", "published", "predicted", "error", "x")] + [
                (r.case + (" *" if r.sets else ""), r.metric, _num(r.published), _num(r.predicted),
                 f"{r.error:+.0%}", f"{r.ratio:.2f}") for r in self.small]
            counted, med = self.small_counted, self.small_median_abs_error
            out += ["", *columns(lines3, right={2, 3, 4, 5})]
            out += [f"* sets {r.sets} (derived from its figure): shown, not counted" for r in self.small if r.sets]
            if counted:
                out.append(f"median |error| {med:.0%} over the {len(counted)} rows that set nothing (goal <= "
                           f"{SMALL_MODELS.median_abs_error:.0%}: "
                           + ("met" if med <= SMALL_MODELS.median_abs_error else "MISSED")
                           + f"), worst {max(r.ratio for r in counted):.2f}x (reported apart from the counted cases)")
        if self.gpu_like:
            lines4 = [("GPU-like published rows", "stack", "metric", "published", "predicted", "error", "x")] + [
                (r.case + (" *" if r.sets else ""), r.stack, r.metric, _num(r.published),
                 _num(r.predicted), f"{r.error:+.0%}", f"{r.ratio:.2f}") for r in self.gpu_like]
            med, counted = self.gpu_like_median_abs_error, self.gpu_like_counted
            out += ["", *columns(lines4, right={3, 4, 5, 6})]
            out += [f"* sets {r.sets} (derived from its figure): shown, not counted" for r in self.gpu_like if r.sets]
            if counted:
                out.append(f"median |error| {med:.0%} over the {len(counted)} rows that set nothing (goal <= "
                           f"{GPU_LIKE.median_abs_error:.0%}: " + ("met" if med <= GPU_LIKE.median_abs_error else "MISSED")
                           + f"), worst {max(r.ratio for r in counted):.2f}x (reported apart from the counted cases)")
        if self.dataflow_training:
            lines5 = [("dataflow chips' published training runs", "metric", "published", "predicted", "error", "x")] + [
                (r.case, r.metric, _num(r.published), _num(r.predicted), f"{r.error:+.0%}", f"{r.ratio:.2f}")
                for r in self.dataflow_training]
            med = statistics.median(abs(r.error) for r in self.dataflow_training)
            out += ["", *columns(lines5, right={2, 3, 4, 5}),
                    f"median |error| {med:.0%}, worst {max(r.ratio for r in self.dataflow_training):.2f}x (reported, "
                    "not counted in the goals above)"]
        if self.bench is not None:
            out += ["", self.bench.table()]
        if self.gpu is not None:
            out += ["", "accelkit (MODELLED) against timings MEASURED on a real H100", self.gpu.table()]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        def row(cells: Iterable[str], tag: str = "td") -> str:
            return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

        parts = ["<p><b>accelkit (MODELLED) against published results</b></p><table>",
                 row(("case", "system", "chips", "metric", "published", "predicted", "error", "assumption",
                      "source"), "th")]
        for r in self.rows:
            parts.append(row((r.case, r.system, str(r.chips), r.metric, _num(r.published), _num(r.predicted),
                              f"{r.error:+.0%}", r.assumption, r.source)))
        parts.append("</table>")
        parts.append(f"<p>median |error| {self.median_abs_error:.0%} (goal ≤ {GOAL_MEDIAN_ABS_ERROR:.0%}); "
                     f"worst {self.max_ratio:.2f}x (goal ≤ {GOAL_MAX_RATIO:g}x)</p>")
        if self.informational:
            parts.append("<p><b>informational (not counted)</b></p><table>")
            parts.append(row(("case", "published", "predicted", "bound", "gap", "needs", "has", "source"), "th"))
            for i in self.informational:
                parts.append(row((i.case, _num(i.published), _num(i.predicted), _num(i.bound), f"{i.gap:.1f}x",
                                  f"{i.required_Bps / 1e12:.0f} TB/s", f"{i.available_Bps / 1e12:.1f} TB/s "
                                  f"({i.tier})", i.source)))
            parts.append("</table>")
        if self.gpu_like:
            parts.append("<p><b>GPU-like published rows</b></p><table>")
            parts.append(row(("case", "system", "stack", "metric", "published", "predicted", "error", "assumption",
                              "source"), "th"))
            for r in self.gpu_like:
                parts.append(row((r.case, r.system, r.stack, r.metric, _num(r.published), _num(r.predicted),
                                  f"{r.error:+.0%}", r.assumption, r.source)))
            parts.append(f"</table><p>median |error| {self.gpu_like_median_abs_error:.0%} "
                         f"(goal ≤ {GPU_LIKE.median_abs_error:.0%})</p>")
        if self.bench is not None:
            parts.append(self.bench._repr_html_())
        return "".join(parts)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# ---------------------------------------------------------------------------------------------
# running the cases
# ---------------------------------------------------------------------------------------------
def run_case(case: Case, model: nn.Module) -> Any:
    """Run one case: a :class:`ServingEstimate` for serve cases, a :class:`PerfReport` for training."""
    if case.measured:
        case = replace(case, kwargs={**case.kwargs, **{name: how() for name, how in case.measured.items()}},
                       measured={})
    if case.call == "serve":
        return serve(model, **case.kwargs)
    if case.call == "train":
        assert case.inputs is not None, "a training case needs its example input shape"
        if len(case.inputs) == 4:  # images, with their class labels: the model computes its own loss
            px = torch.zeros(*case.inputs, device="meta")
            images = {"pixel_values": px.to(memory_format=torch.channels_last) if case.channels_last else px,
                      "labels": torch.zeros(case.inputs[0], dtype=torch.long, device="meta")}
            return compile(model, images, training=True, **case.kwargs).report
        ids = torch.zeros(*case.inputs, dtype=torch.long, device="meta")
        if case.feeds:  # the run's other inputs: labels, masks, segment and position ids
            one = torch.zeros(case.inputs[0], dtype=torch.long, device="meta")
            fed = {"input_ids": ids, **{n: one if n.endswith("sentence_label") else ids for n in case.feeds}}
            return compile(model, fed, training=True, **case.kwargs).report
        return compile(model, (ids,), training=True, **case.kwargs).report
    if case.call == "infer":  # images (batch, channels, height, width) or token ids (batch, sequence)
        assert case.inputs is not None, "an inference case needs its example input shape"
        text = len(case.inputs) == 2
        x = torch.zeros(*case.inputs, dtype=torch.long if text else torch.float32, device="meta")
        if case.channels_last:
            x = x.to(memory_format=torch.channels_last)
        return compile(model, (x,), **case.kwargs).report
    raise ValueError(f"unknown call {case.call!r}")


def _bound(case: Case, model: nn.Module, est: Any) -> tuple[float, float, str, float]:
    """Weight-read bound for a serving case: (tokens/s bound, available B/s, tier, weight bytes)."""
    step = torch.zeros(case.kwargs["batch"], 1, dtype=torch.long, device="meta")
    kw = {k: v for k, v in case.kwargs.items() if k in ("target", "chips", "precision", "parallel")}
    prog = compile(model, (step,), **kw)  # the decode step; reuses the graph serve captured
    plan = prog.memory_plan
    bw = {t.name: t.bandwidth_Bps for t in prog.spec.memory_tiers}
    tier = plan.placement["weights"]
    per_byte = 1 / bw[tier]
    if plan.partial and plan.spill_tier:  # part of the weights streams from a slower tier
        per_byte = plan.resident / bw[tier] + (1 - plan.resident) / bw[plan.spill_tier]
        tier = f"{tier} + {plan.spill_tier}"
    weights = sum(p.numel() for p in model.parameters()) * element_bytes(prog.precision)
    available = est.chips / per_byte
    return available / weights, available, tier, weights


def _iterable(value: Any) -> list[Any]:
    try:
        return list(value)
    except TypeError:
        return [None]  # not a list: refused by the caller


def validate(cases: Iterable[str] | None = None, *, progress: bool = True,
             models: Mapping[str, nn.Module] | None = None, bench: bool | None = None,
             gpu: bool | None = None) -> ValidationResult:
    """Run every reference row (or only ``cases``, by name) and compare with the published figures; with
    ``bench`` (the default when no ``cases`` are named), also every LLM-Inference-Bench configuration of the
    systems accelkit has (:func:`accelkit.sim.bench.validate_bench`, in ``result.bench``); with ``gpu`` (the
    same default), also the 49 timings measured on a real H100 (:func:`accelkit.sim.measured.validate_measured`,
    in ``result.gpu``; about 2 minutes more).

    Builds each model once per call (on the meta device) and reuses its captured graphs; ``models``
    (keyed like :data:`MODELS`) supplies models you already built, so their captured graphs are
    reused too. Prints a line per case when ``progress`` (the published cases take about a minute on two cores,
    the GPU-like BERT rows about a minute more, the measured rows 1-2 minutes more).
    """
    rows = reference_rows()
    by_name = {r["case"]: r for r in rows}
    if cases is not None and (isinstance(cases, str) or not all(isinstance(c, str) for c in _iterable(cases))):
        raise ArgumentError(f"cases must be a list of case names, not {got(cases)}",
                            fix="e.g. ak.validate(['cs3-llama31-8b']) (names: "
                                "accelkit.sim.validate.reference_rows())")
    names = list(by_name) if cases is None else list(cases)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UnknownNameError(f"no reference case called {unknown[0]!r}; known: {', '.join(by_name)}",
                               fix="pick case names from accelkit.sim.validate.reference_rows()")
    problems = check_cases([by_name[n] for n in names])
    if problems:
        raise ValueError("the case mapping disagrees with the reference rows:\n  " + "\n  ".join(problems))
    built: dict[str, nn.Module] = dict(models or {})
    start = time.perf_counter()
    result = ValidationResult([])
    for i, name in enumerate(names, 1):
        t0 = time.perf_counter()
        row, case = by_name[name], CASES[name]
        model = built.get(case.model)
        if model is None:
            model = built[case.model] = MODELS[case.model]()
        out = run_case(case, model)
        attr, unit = METRICS[row["metric"]]
        predicted = float(getattr(out, attr))
        if attr == "throughput":  # a packed run's samples are packs of several of the items the row counts
            predicted *= case.items_per_sample
        published = float(row["value"])
        chips = _leading_int(row["chips"]) or case.chips
        if row["use"] in ("validate", "small-model", "gpu-like", "dataflow-training"):
            err = (predicted - published) / published
            table = {"validate": result.rows, "small-model": result.small, "gpu-like": result.gpu_like,
                     "dataflow-training": result.dataflow_training}[row["use"]]
            table.append(ValidationRow(name, row["system"], chips, row["model"], row["metric"], published, predicted,
                                       err, row["source"], row["confidence"], case.assumption,
                                       str(getattr(out, "stack", "") or ""), case.sets))
            said = f"{err:+.0%}"
        else:
            bound, available, tier, weights = _bound(case, model, out)
            result.informational.append(InformationalRow(
                name, row["system"], chips, row["model"], row["metric"], published, predicted, bound,
                published * weights, available, tier, row["source"], row["confidence"], case.assumption))
            said = f"informational, {published / predicted:.1f}x beyond the model"
        if progress:
            print(f"validate [{i:>2}/{len(names)}] {name:<30} predicted {_num(predicted)} {unit} vs published "
                  f"{_num(published)} ({said}), {time.perf_counter() - t0:.1f} s", flush=True)
    run_bench = cases is None if bench is None else bench
    if run_bench and (bench or reference_files()):  # by default only where the measured rows are at hand
        result.bench = validate_bench(progress=progress)
    elif run_bench and progress:
        print(f"validate: no LLM-Inference-Bench rows under {reference_dir()} (set {REFERENCE_DIR_ENV}); "
              "only the published cases ran")
    if (cases is None if gpu is None else gpu):
        result.gpu = validate_measured(progress=progress)
    result.seconds = time.perf_counter() - start
    return result


__all__ = ["CASES", "GOAL_MAX_RATIO", "GOAL_MEDIAN_ABS_ERROR", "METRICS", "MODELS", "REFERENCE_CSV", "Case",
           "InformationalRow", "ValidationResult", "ValidationRow", "check_cases", "reference_rows", "run_case",
           "validate"]
