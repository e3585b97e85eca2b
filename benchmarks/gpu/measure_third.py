#!/usr/bin/env python3
"""A third set of real GPU timings: the workshop's models at batch sizes, sequence lengths and in modes the first two
files did not hold, to check accelkit's GPU model on runs it was never compared with.

Uses ``measure_more.py``'s models, inputs and timing (the same ``case``): eager BERT-base at batch 128 and at
sequence 512, GPT-2 small training at batch 2 and at sequence 256 and its inference at batch 1, ResNet-50 training
at batch 32 and inference at batch 16, ViT-B/16 at batch 16, a U-Net at 512 x 512 and Llama-3.2-1B's prefill at
batch 4; and two models under ``torch.compile``. Writes ``$OUT/gpu_measured_more.json`` (``measure_more``'s file name and format), ``DRY=1``
checks it on the CPU, ``DEADLINE`` (default 360 s) skips what would start after it.
"""
import time

import measure_more as mm
import torch

if __name__ == "__main__":
    mm.DEADLINE = float(__import__("os").environ.get("DEADLINE", "360"))
    if mm.DRY:
        mm.res["env"] = {"name": "dry-cpu", "torch": torch.__version__}
    else:
        p = torch.cuda.get_device_properties(0)
        mm.res["env"] = {"name": p.name, "sms": p.multi_processor_count, "mem": p.total_memory,
                         "torch": torch.__version__}
    import transformers

    mm.res["env"]["transformers"] = transformers.__version__
    mm.res["env"]["script"] = "benchmarks/gpu/measure_third.py"
    print(mm.res["env"], flush=True)
    mm.case("again-infer-bert-base-b1-s128", "bert-base", 1, 128, False)  # this host against the first file's
    for tag, name, b, s, tr in (("infer-bert-base-b128-s128", "bert-base", 128, 128, False),
                                ("infer-bert-base-b4-s512", "bert-base", 4, 512, False),
                                ("train-bert-base-mlm-b16-s256", "bert-base", 16, 256, True),
                                ("train-gpt2-small-b2-s1024", "gpt2-small", 2, 1024, True),
                                ("train-gpt2-small-b32-s256", "gpt2-small", 32, 256, True),
                                ("infer-gpt2-small-b1-s1024", "gpt2-small", 1, 1024, False),
                                ("infer-gpt2-small-b32-s256", "gpt2-small", 32, 256, False),
                                ("train-resnet50-b32", "resnet50", 32, 224, True),
                                ("infer-resnet50-b16", "resnet50", 16, 224, False),
                                ("infer-vit-base-b16", "vit-base", 16, 224, False),
                                ("train-vit-base-b16", "vit-base", 16, 224, True),
                                ("infer-unet-b4-s512", "unet", 4, 512, False),
                                ("train-unet-b4-s512", "unet", 4, 512, True),
                                ("prefill-llama3.2-1b-b4-p512", "llama-3.2-1b", 4, 512, False)):
        mm.case(tag, name, b, s, tr)
    for tag, name, b, s, tr in (("compiled-infer-vit-base-b64", "vit-base", 64, 224, False),
                                ("compiled-train-bert-base-mlm-b16-s256", "bert-base", 16, 256, True)):
        mm.case(tag, name, b, s, tr, stack="compiled", need=75.0)
    mm.res["env"]["total_s"] = time.time() - mm.T0
    mm.save()
    print("done", f"{time.time() - mm.T0:.0f}s", "errors:", len(mm.res["errors"]), "skipped:", mm.res["skipped"],
          flush=True)
    for r in mm.res["rows"]:
        print(f"{r['case']:<40} {r['stack']:<9} {r['median_s'] * 1e3:9.3f} ms  spread {r['spread']:.0%}", flush=True)
