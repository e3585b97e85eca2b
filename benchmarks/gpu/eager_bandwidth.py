#!/usr/bin/env python3
"""What eager PyTorch's memory-bound kernels reach on a GPU, by how they walk memory.

Times, with CUDA events (median of 20 after 5 warm-ups), each kind of kernel an eager transformer step runs outside
its matmuls, at a few sizes: a bf16 copy and a cast (PyTorch's vectorized loops), an add of two bf16 tensors
(vectorized), an add of an fp32 and a bf16 tensor (autocast's residual stream: the unrolled, dynamically casting
loop), an fp32 add, a GELU in bf16, fp32 layer norms of 768-4,096 features and an fp32 softmax over rows. Prints and
writes, per kernel, the bytes it moved per second and per SM per clock (the SM clock read from nvidia-smi while it
ran). These are what ``GPU_UNROLLED_BYTES_PER_SM_CYCLE`` and ``GPU_ROWS_BYTES_PER_SM_CYCLE`` stand for.
Writes ``$OUT/eager_bandwidth.json``; ``DRY=1`` checks the script on the CPU.
"""
import json
import os
import subprocess

import measure_more as mm
import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp")
DRY = mm.DRY
dev = mm.dev
res = {"env": {}, "rows": []}


def clock_mhz():
    if DRY:
        return 1500.0
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return float(out.split()[0])
    except Exception:  # noqa: BLE001
        return float("nan")


def row(name, access, nbytes, fn, sms):
    t = mm.timeit(fn, 5, 20)[0]
    mhz = clock_mhz()
    r = {"kernel": name, "access": access, "bytes": nbytes, "s": t, "TBps": nbytes / t / 1e12, "sm_mhz": mhz,
         "bytes_per_sm_cycle": nbytes / t / (sms * mhz * 1e6)}
    res["rows"].append(r)
    print(f"{name:<34} {access:<9} {nbytes / 1e6:9.1f} MB {t * 1e6:9.1f} us {r['TBps']:6.2f} TB/s "
          f"{r['bytes_per_sm_cycle']:6.2f} B/SM/clk  (SM {mhz:.0f} MHz)", flush=True)


def at_size(n, sms):
    bf, f32 = torch.bfloat16, torch.float32
    a16, b16 = torch.randn(n, device=dev, dtype=bf), torch.randn(n, device=dev, dtype=bf)
    a32, b32 = torch.randn(n, device=dev, dtype=f32), torch.randn(n, device=dev, dtype=f32)
    out16, out32 = torch.empty_like(a16), torch.empty_like(a32)
    tag = f"{n / 1e6:.0f}M"
    row(f"copy bf16 {tag}", "vector", 4 * n, lambda: out16.copy_(a16), sms)
    row(f"cast fp32->bf16 {tag}", "vector", 6 * n, lambda: out16.copy_(a32), sms)
    row(f"add bf16+bf16 {tag}", "vector", 6 * n, lambda: torch.add(a16, b16, out=out16), sms)
    row(f"add fp32+fp32 {tag}", "vector", 12 * n, lambda: torch.add(a32, b32, out=out32), sms)
    row(f"add fp32+bf16 {tag}", "unrolled", 10 * n, lambda: torch.add(a32, b16, out=out32), sms)
    row(f"mul bf16*fp32 -> fp32 {tag}", "unrolled", 10 * n, lambda: torch.mul(a16, b32, out=out32), sms)
    row(f"gelu bf16 {tag}", "vector", 4 * n, lambda: F.gelu(a16), sms)
    for d in (768, 1024, 4096):
        x = a32.view(-1, d)
        w, b = torch.ones(d, device=dev), torch.zeros(d, device=dev)
        row(f"layer_norm fp32 d{d} {tag}", "rows", 8 * n, lambda x=x, w=w, b=b: F.layer_norm(x, (x.shape[-1],), w, b),
            sms)
    row(f"softmax fp32 rows512 {tag}", "rows", 8 * n, lambda: torch.softmax(a32.view(-1, 512), -1), sms)


def main():
    sms = 2 if DRY else torch.cuda.get_device_properties(0).multi_processor_count
    if not DRY:
        p = torch.cuda.get_device_properties(0)
        res["env"] = {"name": p.name, "sms": sms, "torch": torch.__version__, "l2": getattr(p, "L2_cache_size", None)}
        print(res["env"], flush=True)
    for n in ((3 << 12,) if DRY else (3 << 22, 3 << 24, 3 << 26)):  # 12.6 M - 201 M elements: beyond the L2
        at_size(n, sms)
        if not DRY:
            torch.cuda.empty_cache()
    with open(f"{OUT}/eager_bandwidth.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
