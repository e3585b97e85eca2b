#!/usr/bin/env python3
"""Where a step's GPU time goes, eager against torch.compile: kernel time by kind from torch.profiler.

Uses measure_more.py's models. Prints, per case: the step's wall time (CUDA events), the GPU's busy time
(the sum of kernel times), and the kernel time by kind (GEMM, attention, elementwise/reduction, copy,
optimizer). Writes $OUT/profile_compiled.json. DRY=1 checks the script on the CPU.
"""
import json
import os
import time

import measure_more as mm
import torch
from torch.profiler import ProfilerActivity, profile

OUT = os.environ.get("OUT", "/tmp")
out = {}


def kind(name):
    n = name.lower()
    if any(k in n for k in ("gemm", "cutlass", "cublas", "sm90_xmma", "ampere_bf16", "nvjet", "matmul", "mm_")):
        return "gemm"
    if any(k in n for k in ("flash", "fmha", "attention", "sdpa", "efficient")):
        return "attention"
    if "adam" in n or "multi_tensor" in n or "foreach" in n:
        return "optimizer"
    if "copy" in n or "memcpy" in n or "memset" in n:
        return "copy"
    if "conv" in n or "cudnn" in n or "implicit" in n:
        return "conv"
    return "elementwise/other"


def make_step(name, b, s, training, stack, sgd=False, amp=True):
    """One training or inference step of ``measure_more``'s ``name`` under bf16 autocast, as a function: AdamW
    (fused) for training, or SGD with momentum where ``sgd``; ``stack="compiled"`` wraps the model in
    ``torch.compile(mode="reduce-overhead")``."""
    if mm.DRY:
        b, s = min(b, 2), min(s, 16)
    m = mm.build(name, training)
    x = mm.inputs(name, b, s, training)
    run_model = torch.compile(m, mode="reduce-overhead") if stack == "compiled" and not mm.DRY else m
    opt = None
    if training:
        opt = (torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) if sgd
               else torch.optim.AdamW(m.parameters(), lr=1e-4, fused=not mm.DRY))

    def step():
        if stack == "compiled":
            torch.compiler.cudagraph_mark_step_begin()
        if training:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(mm.dev.type, dtype=torch.bfloat16, enabled=amp):
                loss = mm.forward(run_model, name, x, True)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad(), torch.autocast(mm.dev.type, dtype=torch.bfloat16, enabled=amp):
                mm.forward(run_model, name, x, False)
    return step


def profile_case(tag, name, b, s, training, stack, amp=True):
    step = make_step(name, b, s, training, stack, sgd=name in ("unet", "resnet50"), amp=amp)  # as measure_more.py trains them
    for _ in range(4):
        step()
    mm.sync()
    med, best, _ = mm.timeit(step, 2, 10)
    acts = [ProfilerActivity.CPU] + ([] if mm.DRY else [ProfilerActivity.CUDA])
    with profile(activities=acts) as prof:
        for _ in range(3):
            step()
        mm.sync()
    by = {}
    n_kernels = 0
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)
        if e.device_type == torch.autograd.DeviceType.CUDA and t:
            by[kind(e.key)] = by.get(kind(e.key), 0) + t / 3 / 1e3  # ms per step
            n_kernels += e.count / 3
    top = sorted(((getattr(e, "device_time_total", 0) / 3 / 1e3, e.count // 3, e.key[:150]) for e in prof.key_averages()
                  if e.device_type == torch.autograd.DeviceType.CUDA), reverse=True)[:int(os.environ.get("TOP", "12"))]
    busy = sum(by.values())
    out[tag] = {"step_ms": med * 1e3, "gpu_busy_ms": busy, "kernels_per_step": n_kernels, "by_kind_ms": by, "top": top}
    print(f"== {tag}: step {med * 1e3:.2f} ms, GPU busy {busy:.2f} ms, {n_kernels:.0f} kernels/step", flush=True)
    print("   " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by.items(), key=lambda kv: -kv[1])), flush=True)
    for t, c, k in top:
        print(f"   {t:7.3f} ms x{c:<4} {k}", flush=True)
    with open(f"{OUT}/profile_compiled.json", "w") as f:
        json.dump(out, f, indent=1)
    torch._dynamo.reset()


if __name__ == "__main__":
    t0 = time.time()
    for args in (("compiled-infer-bert-base-b32-s128", "bert-base", 32, 128, False, "compiled"),
                 ("eager-infer-bert-base-b32-s128", "bert-base", 32, 128, False, "eager"),
                 ("compiled-train-bert-base-mlm-b32-s512", "bert-base", 32, 512, True, "compiled"),
                 ("eager-train-bert-base-mlm-b32-s512", "bert-base", 32, 512, True, "eager"),
                 ("compiled-train-gpt2-small-b8-s1024", "gpt2-small", 8, 1024, True, "compiled"),
                 ("eager-train-gpt2-small-b8-s1024", "gpt2-small", 8, 1024, True, "eager"),
                 ("eager-train-unet-b16-s256", "unet", 16, 256, True, "eager"),
                 ("eager-train-resnet50-b64", "resnet50", 64, 224, True, "eager"),
                 ("compiled-train-resnet50-b64", "resnet50", 64, 224, True, "compiled"),
                 ("compiled-infer-vit-base-b64", "vit-base", 64, 224, False, "compiled"),
                 ("eager-infer-vit-base-b64", "vit-base", 64, 224, False, "eager")):
        if os.environ.get("CASES") and args[0] not in os.environ["CASES"].split(","):
            continue  # CASES=tag,tag runs only those
        if time.time() - t0 > float(os.environ.get("DEADLINE", "150")):
            print("skip", args[0], flush=True)
            continue
        try:
            profile_case(*args)
        except Exception as e:  # noqa: BLE001
            print("ERROR", args[0], repr(e)[:400], flush=True)
    print(f"done {time.time() - t0:.0f}s", flush=True)
