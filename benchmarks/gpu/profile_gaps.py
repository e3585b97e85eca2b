#!/usr/bin/env python3
"""Where the unseen GPU rows lose their time: kernel time by kind, the GPU's idle time, the host's time per step.

``measure_more.py``'s rows that accelkit's GPU model misses most on both GPUs (ViT-B/16 inference at batch 64 and
256, BERT-large's MLM training at batch 16 x 128 against 8 x 512, the U-Net at batch 1, BERT-large at batch 1),
profiled with ``torch.profiler``: per step, the wall time (CUDA events, median of 10), the host's own time to
issue the step (``time.perf_counter`` around the call, before the synchronisation), the GPU's busy time (the sum of
its kernels), the kernels by kind and the slowest kernels with their counts, and which attention kernels ran.
Writes ``$OUT/profile_gaps.json``. ``DRY=1`` checks the script on the CPU with tiny shapes; ``CASES=tag,tag`` runs
only those; ``DEADLINE`` (seconds, default 300) skips what would start after it.
"""
import json
import os
import statistics
import time

import measure_more as mm
import torch
from profile_compiled import kind, make_step
from torch.profiler import ProfilerActivity, profile

OUT = os.environ.get("OUT", "/tmp")
DEADLINE = float(os.environ.get("DEADLINE", "300"))
out = {"env": {}, "cases": {}}


def profile_case(tag, name, b, s, training, stack="eager"):
    step = make_step(name, b, s, training, stack, sgd=name in ("unet", "resnet50"))
    for _ in range(4):
        step()
    mm.sync()
    med, best, ts = mm.timeit(step, 2, 10)
    host = []
    for _ in range(7):  # the host's time to issue one step, the GPU idle before it starts
        mm.sync()
        t = time.perf_counter()
        step()
        host.append(time.perf_counter() - t)
        mm.sync()
    acts = [ProfilerActivity.CPU] + ([] if mm.DRY else [ProfilerActivity.CUDA])
    with profile(activities=acts) as prof:
        for _ in range(3):
            step()
        mm.sync()
    by, n_kernels, attention = {}, 0, {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)
        if e.device_type == torch.autograd.DeviceType.CUDA and t:
            k = kind(e.key)
            by[k] = by.get(k, 0) + t / 3 / 1e3  # ms per step
            n_kernels += e.count / 3
            if k == "attention":
                attention[e.key[:120]] = [e.count // 3, t / 3 / 1e3]
    top = sorted(((getattr(e, "device_time_total", 0) / 3 / 1e3, e.count // 3, e.key[:110]) for e in prof.key_averages()
                  if e.device_type == torch.autograd.DeviceType.CUDA), reverse=True)[:25]
    cpu_ops = sorted(((e.self_cpu_time_total / 3 / 1e3, e.count // 3, e.key[:60]) for e in prof.key_averages()
                      if e.device_type == torch.autograd.DeviceType.CPU), reverse=True)[:15]
    busy = sum(by.values())
    row = {"step_ms": med * 1e3, "best_ms": best * 1e3, "spread": (ts[-1] - ts[0]) / med if med else 0,
           "host_issue_ms": statistics.median(host) * 1e3, "gpu_busy_ms": busy, "kernels_per_step": n_kernels,
           "by_kind_ms": by, "attention": attention, "top": top, "cpu_self_top": cpu_ops,
           "aten_ops_per_step": sum(e.count for e in prof.key_averages()
                                    if e.key.startswith("aten::") and e.device_type == torch.autograd.DeviceType.CPU) / 3}
    out["cases"][tag] = row
    print(f"== {tag}: step {med * 1e3:.2f} ms (best {best * 1e3:.2f}), host issue {row['host_issue_ms']:.2f} ms, "
          f"GPU busy {busy:.2f} ms, {n_kernels:.0f} kernels/step", flush=True)
    print("   " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by.items(), key=lambda kv: -kv[1])), flush=True)
    for t, c, k in top[:14]:
        print(f"   {t:7.3f} ms x{c:<4} {k}", flush=True)
    with open(f"{OUT}/profile_gaps.json", "w") as f:
        json.dump(out, f, indent=1)
    torch._dynamo.reset()


CASES = (("eager-infer-vit-base-b256", "vit-base", 256, 224, False),
         ("eager-train-bert-large-mlm-b16-s128", "bert-large", 16, 128, True),
         ("eager-train-bert-large-mlm-b8-s512", "bert-large", 8, 512, True),
         ("eager-infer-unet-b1-s256", "unet", 1, 256, False),
         ("eager-infer-vit-base-b64", "vit-base", 64, 224, False),
         ("eager-infer-bert-large-b1-s128", "bert-large", 1, 128, False),
         ("eager-infer-bert-base-b1-s128", "bert-base", 1, 128, False),
         ("eager-train-vit-base-b64", "vit-base", 64, 224, True),
         ("eager-infer-unet-b16-s256", "unet", 16, 256, False))

if __name__ == "__main__":
    t0 = time.time()
    if not mm.DRY:
        p = torch.cuda.get_device_properties(0)
        out["env"] = {"name": p.name, "sms": p.multi_processor_count, "torch": torch.__version__}
        print(out["env"], flush=True)
    for args in CASES:
        if os.environ.get("CASES") and args[0] not in os.environ["CASES"].split(","):
            continue
        if time.time() - t0 > DEADLINE:
            print("skip", args[0], flush=True)
            continue
        try:
            profile_case(*args)
        except Exception as e:  # noqa: BLE001
            print("ERROR", args[0], repr(e)[:400], flush=True)
        if not mm.DRY:
            torch.cuda.empty_cache()  # the case's model and optimizer went with its frame
    out["env"]["total_s"] = time.time() - t0
    with open(f"{OUT}/profile_gaps.json", "w") as f:
        json.dump(out, f, indent=1)
    print(f"done {time.time() - t0:.0f}s", flush=True)
