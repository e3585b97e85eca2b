#!/usr/bin/env python3
"""Where the GPU time of ``measure_new_kinds.py``'s rows goes, by kernel (``profile_compiled.py``'s profile of one
step: wall time, GPU busy time, kernel time by kind and the slowest kernels): the depthwise and windowed-attention
networks, T5-small and GPT-2 small in fp32. Writes ``$OUT/profile_compiled.json``; ``DRY=1`` checks it on the CPU."""
import os
import time

import measure_new_kinds  # noqa: F401  (adds its models to measure_more's)
import profile_compiled as pc

CASES = (("eager-infer-mobilenet-v2-b256", "mobilenet-v2", 256, 224, False, True),
         ("eager-infer-efficientnet-b0-b256", "efficientnet-b0", 256, 224, False, True),
         ("eager-infer-convnext-tiny-b128", "convnext-tiny", 128, 224, False, True),
         ("eager-train-convnext-tiny-b64", "convnext-tiny", 64, 224, True, True),
         ("eager-infer-swin-tiny-b64", "swin-tiny", 64, 224, False, True),
         ("eager-train-swin-tiny-b32", "swin-tiny", 32, 224, True, True),
         ("eager-train-t5-small-b32-s128", "t5-small", 32, 128, True, True),
         ("eager-infer-t5-small-b32-s128", "t5-small", 32, 128, False, True),
         ("fp32-eager-train-gpt2-small-b8-s512", "gpt2-small", 8, 512, True, False))

if __name__ == "__main__":
    t0 = time.time()
    for tag, name, b, s, tr, amp in CASES:
        if time.time() - t0 > float(os.environ.get("DEADLINE", "200")):
            print("skip", tag, flush=True)
            continue
        try:
            pc.profile_case(tag, name, b, s, tr, "eager", amp=amp)
        except Exception as e:  # noqa: BLE001
            print("ERROR", tag, repr(e)[:400], flush=True)
    print(f"done {time.time() - t0:.0f}s", flush=True)
