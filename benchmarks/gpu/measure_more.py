#!/usr/bin/env python3
"""More real timings on an NVIDIA GPU: models, sizes and a software stack the first H100 file did not hold.

The first file (``accelkit/sim/reference/gpu_measured_h100.csv``, taken by ``shared/reference/gpu_measured/
measure.py``) held GEMMs, GPT-2 small, BERT-base, ResNet-50 and Llama-3-8B, all in eager PyTorch. This script
times what the GPU model has not been checked against, so that the check is on runs it has never seen:

- eager training and inference of larger and other models: BERT-large, GPT-2 medium, ViT-B/16, a U-Net
  (``accelkit.zoo.unet2d.UNet2D``'s layers at the original paper's widths) and Llama-3.2-1B's prefill;
- the same kind of steps under ``torch.compile(mode="reduce-overhead")`` (fused kernels, CUDA graphs), the
  ``"compiled"`` stack, with the compile's own wall time;
- a few rows of the first file again, to show how much one H100 differs from another.

Every model is a Hugging Face ``transformers`` model built from its config (random weights) or the U-Net below,
so that accelkit can capture the very same layers. Run on a machine with a CUDA GPU and torch + transformers:
``python3 measure_more.py``; writes ``$OUT/gpu_measured_more.json``. ``DRY=1`` runs tiny shapes on the CPU
(torch.compile with the eager backend) to check the script before device time. ``DEADLINE`` (seconds, default
420) skips what would start after it. Each figure is the median of 5-10 repetitions after warm-up, timed with
CUDA events.
"""
import json
import os
import time
import traceback

import torch
import torch.nn.functional as F
from torch import nn

OUT = os.environ.get("OUT", "/tmp")
DRY = os.environ.get("DRY") == "1"
DEADLINE = float(os.environ.get("DEADLINE", "420"))
T0 = time.time()
dev = torch.device("cpu" if DRY else "cuda")
res = {"env": {}, "rows": [], "errors": [], "skipped": []}


def save():
    with open(f"{OUT}/gpu_measured_more.json", "w") as f:
        json.dump(res, f, indent=1)


def left():
    return DEADLINE - (time.time() - T0)


def sync():
    if not DRY:
        torch.cuda.synchronize()


def timeit(fn, warm=3, iters=10):
    if DRY:
        fn()
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t, time.perf_counter() - t, [time.perf_counter() - t]
    for _ in range(warm):
        fn()
    sync()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts


def double_conv(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
    )


class UNet2D(nn.Module):
    """accelkit.zoo.unet2d.UNet2D, copied so that this script needs no accelkit (same layers, same names)."""

    def __init__(self, in_channels=1, classes=4, width=8, depth=2):
        super().__init__()
        widths = [width * 2**i for i in range(depth + 1)]
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths[:-1]:
            self.down.append(double_conv(c, w))
            c = w
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(widths[-2], widths[-1])
        self.up = nn.ModuleList()
        self.up_conv = nn.ModuleList()
        for w_low, w in zip(widths[:0:-1], widths[-2::-1], strict=False):
            self.up.append(nn.ConvTranspose2d(w_low, w, kernel_size=2, stride=2))
            self.up_conv.append(double_conv(2 * w, w))
        self.head = nn.Conv2d(widths[0], classes, kernel_size=1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.up, self.up_conv, reversed(skips), strict=True):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.head(x)


# ---- the models: (builder, inputs(batch, seq), loss) ------------------------------------------------------
def cfgs():
    from transformers import BertConfig, GPT2Config, LlamaConfig, ViTConfig
    if DRY:
        return {
            "bert-large": BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128),
            "bert-base": BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128),
            "gpt2-medium": GPT2Config(n_layer=2, n_embd=64, n_head=2),
            "gpt2-small": GPT2Config(n_layer=2, n_embd=64, n_head=2),
            "vit-base": ViTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                                  image_size=32, patch_size=8, num_labels=2),
            "llama-3.2-1b": LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, intermediate_size=128, vocab_size=1000),
            "unet": dict(in_channels=3, classes=4, width=8, depth=2),
            "resnet50": None,
        }
    return {
        "bert-large": BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
        "bert-base": BertConfig(),
        "gpt2-medium": GPT2Config(n_embd=1024, n_layer=24, n_head=16),
        "gpt2-small": GPT2Config(),
        "vit-base": ViTConfig(num_labels=1000),  # ViT-B/16 at 224x224, 1,000 classes
        "llama-3.2-1b": LlamaConfig(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                    num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
                                    tie_word_embeddings=True, rope_theta=500000.0),
        "unet": dict(in_channels=3, classes=4, width=64, depth=4),  # Ronneberger et al.'s widths, 64..1024
        "resnet50": None,
    }


def build(name, training):
    c = cfgs()[name]
    torch.manual_seed(0)
    with torch.device(dev):  # initialised where it runs: no minutes of CPU init for a billion weights
        return _build(name, c, training)


def _build(name, c, training):
    from transformers import (
        BertForMaskedLM,
        BertModel,
        GPT2LMHeadModel,
        LlamaForCausalLM,
        ResNetConfig,
        ResNetForImageClassification,
        ViTForImageClassification,
    )
    if name.startswith("bert"):
        m = (BertForMaskedLM if training else BertModel)(c)
    elif name.startswith("gpt2"):
        c.use_cache = False
        m = GPT2LMHeadModel(c)
    elif name.startswith("vit"):
        m = ViTForImageClassification(c)
    elif name.startswith("llama"):
        c.use_cache = False
        torch.set_default_dtype(torch.bfloat16)
        try:
            m = LlamaForCausalLM(c)
        finally:
            torch.set_default_dtype(torch.float32)
    elif name == "unet":
        m = UNet2D(**c)
    else:
        m = ResNetForImageClassification(ResNetConfig(num_labels=1000) if not DRY else ResNetConfig(hidden_sizes=[16, 32, 64, 128],
                                                                                      embedding_size=16))
    return m.to(dev).train(training)


def inputs(name, b, s, training):
    img = 32 if DRY else 224
    if name in ("vit-base", "resnet50"):
        px = torch.randn(b, 3, img, img, device=dev)
        y = torch.randint(0, 2 if DRY else 1000, (b,), device=dev)
        return ({"pixel_values": px, "labels": y} if training else {"pixel_values": px})
    if name == "unet":
        side = 32 if DRY else s
        return {"x": torch.randn(b, 3, side, side, device=dev), "mask": torch.randint(0, 4, (b, side, side), device=dev)}
    vocab = {"bert-large": 30522, "bert-base": 30522, "gpt2-medium": 50257, "gpt2-small": 50257,
             "llama-3.2-1b": 1000 if DRY else 128256}[name]
    ids = torch.randint(0, vocab, (b, s), device=dev)
    if name.startswith("llama"):
        return {"input_ids": ids, "logits_to_keep": 1}
    return {"input_ids": ids, "labels": ids} if training else {"input_ids": ids}


def forward(m, name, x, training):
    if name == "unet":
        out = m(x["x"])
        return F.cross_entropy(out, x["mask"]) if training else out
    out = m(**x)
    return out.loss if training else out


def case(tag, name, b, s, training, stack="eager", warm=5, iters=15, need=20.0, amp=True):
    """One timed row; ``amp=False`` runs it in fp32, without bf16 autocast (PyTorch's defaults: TF32 off for
    matmuls)."""
    if left() < need:
        res["skipped"].append(tag)
        print(f"skip {tag}: {left():.0f}s left", flush=True)
        return
    t0 = time.time()
    if DRY:
        b, s = min(b, 2), min(s, 16)
    try:
        m = build(name, training)
        x = inputs(name, b, s, training)
        autocast = amp and not name.startswith("llama")  # Llama runs bf16 weights, the others autocast over fp32
        run_model = m
        if stack == "compiled":
            run_model = torch.compile(m, mode="reduce-overhead" if not DRY else None,
                                      backend="inductor" if not DRY else "eager")
        if training:
            opt = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) if name in ("unet", "resnet50")
                   else torch.optim.AdamW(m.parameters(), lr=1e-4, fused=not DRY))

            def step():
                if stack == "compiled":
                    torch.compiler.cudagraph_mark_step_begin()
                opt.zero_grad(set_to_none=True)
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
                    loss = forward(run_model, name, x, True)
                loss.backward()
                opt.step()
        else:
            def step():
                if stack == "compiled":
                    torch.compiler.cudagraph_mark_step_begin()
                with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
                    return forward(run_model, name, x, False)
        compile_s = None
        if stack == "compiled":
            tc = time.time()
            step()
            step()
            sync()
            compile_s = time.time() - tc
        if not DRY:
            torch.cuda.reset_peak_memory_stats()
        med, best, ts = timeit(step, warm, iters)
        row = {"case": tag, "workload": "train" if training else ("prefill" if name.startswith("llama") else "infer"),
               "model": name, "batch": b, "seq": s, "stack": stack, "precision": "bf16" if amp else "fp32",
               "median_s": med, "best_s": best,
               "spread": (ts[-1] - ts[0]) / med if med else 0.0, "compile_s": compile_s,
               "params": sum(p.numel() for p in m.parameters()),
               "peak_mem": 0 if DRY else torch.cuda.max_memory_allocated(), "wall_s": time.time() - t0}
        res["rows"].append(row)
        print(f"{tag:<34} {med * 1e3:9.3f} ms  (best {best * 1e3:.3f}, spread {row['spread']:.1%})"
              + (f"  compile {compile_s:.1f}s" if compile_s else "") + f"  [{time.time() - t0:.0f}s]", flush=True)
    except Exception:
        res["errors"].append({"case": tag, "trace": traceback.format_exc()[-3000:]})
        print(f"ERROR {tag}: {traceback.format_exc()[-600:]}", flush=True)
    finally:
        for v in ("m", "run_model", "opt", "x"):
            locals().pop(v, None)
        if not DRY:
            torch.cuda.empty_cache()
        torch._dynamo.reset()
        save()


def gemm_again():
    n = 64 if DRY else 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
    med, best, ts = timeit(lambda: a @ b, 3, 10)
    res["rows"].append({"case": "gemm-square8192-m8192", "workload": "gemm", "model": "matmul 8192^3", "batch": n,
                        "seq": None, "stack": "eager", "median_s": med, "best_s": best,
                        "spread": (ts[-1] - ts[0]) / med if med else 0.0})
    print(f"gemm 8192^3 {med * 1e3:.3f} ms = {2 * n**3 / med / 1e12:.0f} TFLOP/s", flush=True)
    save()


if __name__ == "__main__":
    if DRY:
        res["env"] = {"name": "dry-cpu", "torch": torch.__version__}
    else:
        p = torch.cuda.get_device_properties(0)
        res["env"] = {"name": p.name, "sms": p.multi_processor_count, "mem": p.total_memory, "torch": torch.__version__}
    import transformers
    res["env"]["transformers"] = transformers.__version__
    print(res["env"], flush=True)
    gemm_again()
    # the first file's rows again: one H100 against another
    case("again-infer-bert-base-b1-s128", "bert-base", 1, 128, False)
    case("again-train-gpt2-small-b8-s1024", "gpt2-small", 8, 1024, True)
    # eager, models and sizes not seen before
    for b, s in ((1, 128), (32, 128), (8, 512)):
        case(f"infer-bert-large-b{b}-s{s}", "bert-large", b, s, False)
    for b, s in ((16, 128), (8, 512)):
        case(f"train-bert-large-mlm-b{b}-s{s}", "bert-large", b, s, True)
    case("infer-gpt2-medium-b1-s128", "gpt2-medium", 1, 128, False)
    case("infer-gpt2-medium-b8-s1024", "gpt2-medium", 8, 1024, False)
    case("train-gpt2-medium-b4-s1024", "gpt2-medium", 4, 1024, True)
    for b in (1, 64, 256):
        case(f"infer-vit-base-b{b}", "vit-base", b, 224, False)
    case("train-vit-base-b64", "vit-base", 64, 224, True)
    case("infer-unet-b1-s256", "unet", 1, 256, False)
    case("infer-unet-b16-s256", "unet", 16, 256, False)
    case("train-unet-b16-s256", "unet", 16, 256, True)
    for b, s in ((1, 512), (8, 1024), (32, 128)):
        case(f"prefill-llama3.2-1b-b{b}-p{s}", "llama-3.2-1b", b, s, False, warm=2, iters=7)
    # torch.compile(mode="reduce-overhead"): fused kernels, CUDA graphs
    for tag, name, b, s, tr in (("infer-bert-base-b1-s128", "bert-base", 1, 128, False),
                                ("infer-bert-base-b32-s128", "bert-base", 32, 128, False),
                                ("infer-resnet50-b1", "resnet50", 1, 224, False),
                                ("infer-resnet50-b256", "resnet50", 256, 224, False),
                                ("infer-gpt2-small-b8-s1024", "gpt2-small", 8, 1024, False),
                                ("train-gpt2-small-b8-s1024", "gpt2-small", 8, 1024, True),
                                ("train-resnet50-b64", "resnet50", 64, 224, True),
                                ("train-bert-base-mlm-b32-s512", "bert-base", 32, 512, True)):
        case(f"compiled-{tag}", name, b, s, tr, stack="compiled", need=75.0)
    res["env"]["total_s"] = time.time() - T0
    save()
    print("done", f"{time.time() - T0:.0f}s", "errors:", len(res["errors"]), "skipped:", res["skipped"], flush=True)
    for r in res["rows"]:
        print(f"{r['case']:<40} {r['stack']:<9} {r['median_s'] * 1e3:9.3f} ms  spread {r['spread']:.0%}"
              + (f"  compile {r['compile_s']:.0f}s" if r.get("compile_s") else ""), flush=True)
