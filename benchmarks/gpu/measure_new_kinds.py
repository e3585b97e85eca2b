#!/usr/bin/env python3
"""Real GPU timings of kinds of model accelkit's GPU model was never checked against.

The earlier files held transformers (BERT, GPT-2, ViT, Llama), ResNet-50 and a U-Net, all under bf16 autocast.
This one times what a workshop brings next and none of them has:

- depthwise and grouped convolutions: MobileNetV2, EfficientNet-B0 (squeeze-and-excitation too), ConvNeXt-T
  (7 x 7 depthwise, layer norms over channels);
- windowed attention: Swin-T;
- an encoder-decoder: T5-small, trained (teacher forcing) and run;
- fp32 without autocast (PyTorch's defaults: TF32 off for matmuls, on for cuDNN convolutions): GPT-2 small trained,
  BERT-base run;
- host-bound batch-1 inference of two convolutional networks with many small ops;
- two of them under ``torch.compile(mode="reduce-overhead")``.

Every model is a Hugging Face ``transformers`` model built from its config (random weights), so accelkit captures
the very same layers. Uses ``measure_more.py``'s timing (median of 15 after 5 warm-ups, CUDA events) and file
format; writes ``$OUT/gpu_measured_more.json``. ``DRY=1`` checks it on the CPU with tiny shapes, ``DEADLINE``
(seconds, default 400) skips what would start after it; ``PROFILE=1`` then profiles two of the training steps
(``profile_compiled.py``'s kernel time by kind, ``$OUT/profile_compiled.json``).
"""
import time

import measure_more as mm
import torch

_cfgs, _build, _inputs = mm.cfgs, mm._build, mm.inputs
IMAGES = ("mobilenet-v2", "efficientnet-b0", "convnext-tiny", "swin-tiny")


def new_cfgs():
    from transformers import ConvNextConfig, EfficientNetConfig, MobileNetV2Config, SwinConfig, T5Config
    if mm.DRY:
        return {
            "mobilenet-v2": MobileNetV2Config(num_labels=10, depth_multiplier=0.35, image_size=32),
            "efficientnet-b0": EfficientNetConfig(num_labels=10, width_coefficient=0.25, depth_coefficient=0.25,
                                                  image_size=32, hidden_dim=320),
            "convnext-tiny": ConvNextConfig(num_labels=10, depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64]),
            "swin-tiny": SwinConfig(num_labels=10, image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                    num_heads=[1, 2], window_size=4),
            "t5-small": T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, vocab_size=100,
                                 decoder_start_token_id=0, pad_token_id=0),
        }
    return {
        "mobilenet-v2": MobileNetV2Config(num_labels=1000),  # 1.0 x 224
        # EfficientNet-B0 (transformers' defaults are B7's: width 2.0, depth 3.1, 600 x 600)
        "efficientnet-b0": EfficientNetConfig(num_labels=1000, width_coefficient=1.0, depth_coefficient=1.0,
                                              image_size=224, hidden_dim=1280, dropout_rate=0.2),
        "convnext-tiny": ConvNextConfig(num_labels=1000),
        "swin-tiny": SwinConfig(num_labels=1000),
        "t5-small": T5Config(decoder_start_token_id=0, pad_token_id=0),  # t5-small: d_model 512, 6 + 6 layers
    }


def cfgs():
    return {**_cfgs(), **new_cfgs()}


def build_(name, c, training):
    from transformers import (
        ConvNextForImageClassification,
        EfficientNetForImageClassification,
        MobileNetV2ForImageClassification,
        SwinForImageClassification,
        T5ForConditionalGeneration,
    )
    classes = {"mobilenet-v2": MobileNetV2ForImageClassification, "efficientnet-b0": EfficientNetForImageClassification,
               "convnext-tiny": ConvNextForImageClassification, "swin-tiny": SwinForImageClassification,
               "t5-small": T5ForConditionalGeneration}
    if name in classes:
        if name == "t5-small":
            c.use_cache = False
        return classes[name](c).to(mm.dev).train(training)
    return _build(name, c, training)


def inputs(name, b, s, training):
    if name in IMAGES:
        img = 32 if mm.DRY else 224
        px = torch.randn(b, 3, img, img, device=mm.dev)
        y = torch.randint(0, 10 if mm.DRY else 1000, (b,), device=mm.dev)
        return {"pixel_values": px, "labels": y} if training else {"pixel_values": px}
    if name == "t5-small":
        ids = torch.randint(0, 100 if mm.DRY else 32128, (b, s), device=mm.dev)
        return {"input_ids": ids, "labels": ids} if training else {"input_ids": ids, "decoder_input_ids": ids}
    return _inputs(name, b, s, training)


mm.cfgs, mm._build, mm.inputs = cfgs, build_, inputs

if __name__ == "__main__":
    import platform

    mm.DEADLINE = float(__import__("os").environ.get("DEADLINE", "400"))
    if mm.DRY:
        mm.res["env"] = {"name": "dry-cpu", "torch": torch.__version__}
    else:
        p = torch.cuda.get_device_properties(0)
        mm.res["env"] = {"name": p.name, "sms": p.multi_processor_count, "mem": p.total_memory,
                         "torch": torch.__version__}
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    import transformers

    mm.res["env"].update({"transformers": transformers.__version__, "script": "benchmarks/gpu/measure_new_kinds.py",
                          "host_cpu": cpu})
    print(mm.res["env"], flush=True)
    mm.case("again-infer-bert-base-b1-s128", "bert-base", 1, 128, False)  # this host against the first file's
    for tag, name, b, s, tr in (("infer-mobilenet-v2-b256", "mobilenet-v2", 256, 224, False),
                                ("train-mobilenet-v2-b128", "mobilenet-v2", 128, 224, True),
                                ("infer-mobilenet-v2-b1", "mobilenet-v2", 1, 224, False),
                                ("infer-efficientnet-b0-b256", "efficientnet-b0", 256, 224, False),
                                ("train-efficientnet-b0-b64", "efficientnet-b0", 64, 224, True),
                                ("infer-efficientnet-b0-b1", "efficientnet-b0", 1, 224, False),
                                ("infer-convnext-tiny-b128", "convnext-tiny", 128, 224, False),
                                ("train-convnext-tiny-b64", "convnext-tiny", 64, 224, True),
                                ("infer-swin-tiny-b64", "swin-tiny", 64, 224, False),
                                ("train-swin-tiny-b32", "swin-tiny", 32, 224, True),
                                ("train-t5-small-b32-s128", "t5-small", 32, 128, True),
                                ("infer-t5-small-b32-s128", "t5-small", 32, 128, False)):
        mm.case(tag, name, b, s, tr)
    mm.case("fp32-train-gpt2-small-b8-s512", "gpt2-small", 8, 512, True, amp=False)
    mm.case("fp32-infer-bert-base-b32-s128", "bert-base", 32, 128, False, amp=False)
    for tag, name, b, s, tr in (("infer-mobilenet-v2-b256", "mobilenet-v2", 256, 224, False),
                                ("infer-convnext-tiny-b128", "convnext-tiny", 128, 224, False)):
        mm.case(f"compiled-{tag}", name, b, s, tr, stack="compiled", need=75.0)
    if __import__("os").environ.get("PROFILE") == "1":  # where two training steps' GPU time goes, by kernel
        import profile_compiled

        for tag, name, b in (("eager-train-mobilenet-v2-b128", "mobilenet-v2", 128),
                             ("eager-train-efficientnet-b0-b64", "efficientnet-b0", 64)):
            if mm.left() > 30:
                try:
                    profile_compiled.profile_case(tag, name, b, 224, True, "eager")
                except Exception as e:  # noqa: BLE001
                    print("ERROR", tag, repr(e)[:400], flush=True)
    mm.res["env"]["total_s"] = time.time() - mm.T0
    mm.save()
    print("done", f"{time.time() - mm.T0:.0f}s", "errors:", len(mm.res["errors"]), "skipped:", mm.res["skipped"],
          flush=True)
    for r in mm.res["rows"]:
        print(f"{r['case']:<40} {r['stack']:<9} {r['median_s'] * 1e3:9.3f} ms  spread {r['spread']:.0%}"
              + (f"  compile {r['compile_s']:.0f}s" if r.get("compile_s") else ""), flush=True)
