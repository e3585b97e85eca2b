#!/usr/bin/env python3
"""A convolution's forward, data gradient and weight gradient, timed apart on a real GPU.

For every distinct convolution of torchvision's ResNet-50 (batch 64 and 256, channels_last, as the measured training
rows ran) and of the measured U-Net (batch 16 at 256 x 256, NCHW), in bf16: the forward (F.conv2d), the gradient
of the input and the gradient of the weight (aten.convolution_backward with one output mask each), each the median
of 10 timings of 5 calls after warm-up, with CUDA events. cuDNN's default heuristics (torch.backends.cudnn.benchmark
off), as the measured steps ran. Writes $OUT/conv_grads.json. DRY=1 checks it on the CPU with tiny shapes.
"""
import json
import os
import time

import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp")
DRY = os.environ.get("DRY") == "1"
dev = torch.device("cpu" if DRY else "cuda")
dt = torch.float32 if DRY else torch.bfloat16
RESNET = [  # (c_in, c_out, kernel, stride, input side)
    (3, 64, 7, 2, 224), (64, 64, 1, 1, 56), (64, 64, 3, 1, 56), (64, 256, 1, 1, 56), (256, 64, 1, 1, 56),
    (256, 128, 1, 1, 56), (128, 128, 3, 2, 56), (128, 512, 1, 1, 28), (256, 512, 1, 2, 56), (512, 128, 1, 1, 28),
    (128, 128, 3, 1, 28), (512, 256, 1, 1, 28), (256, 256, 3, 2, 28), (256, 1024, 1, 1, 14), (512, 1024, 1, 2, 28),
    (1024, 256, 1, 1, 14), (256, 256, 3, 1, 14), (1024, 512, 1, 1, 14), (512, 512, 3, 2, 14), (512, 2048, 1, 1, 7),
    (1024, 2048, 1, 2, 14), (2048, 512, 1, 1, 7), (512, 512, 3, 1, 7)]
UNET = [(3, 64, 3, 1, 256), (64, 64, 3, 1, 256), (64, 128, 3, 1, 128), (128, 128, 3, 1, 128), (128, 256, 3, 1, 64),
        (256, 256, 3, 1, 64), (256, 512, 3, 1, 32), (512, 512, 3, 1, 32), (512, 1024, 3, 1, 16),
        (1024, 1024, 3, 1, 16), (1024, 512, 3, 1, 32), (512, 256, 3, 1, 64), (256, 128, 3, 1, 128),
        (128, 64, 3, 1, 256), (64, 4, 1, 1, 256)]


def timeit(fn, reps=5):
    for _ in range(2):
        fn()
    if DRY:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3 / reps)
    ts.sort()
    return ts[len(ts) // 2]


def run(net, shapes, batch, channels_last):
    rows = []
    for c_in, c_out, k, stride, side in shapes:
        if DRY:
            side, batch_ = max(8, side // 16), 2
        else:
            batch_ = batch
        pad = k // 2
        x = torch.randn(batch_, c_in, side, side, device=dev, dtype=dt)
        w = torch.randn(c_out, c_in, k, k, device=dev, dtype=dt)
        if channels_last:
            x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        y = F.conv2d(x, w, None, stride, pad)
        g = torch.randn_like(y)

        def back(mask, g=g, x=x, w=w, stride=stride, pad=pad):
            return torch.ops.aten.convolution_backward(g, x, w, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1,
                                                       mask)
        with torch.no_grad():
            fwd = timeit(lambda x=x, w=w, stride=stride, pad=pad: F.conv2d(x, w, None, stride, pad))
            dgrad = timeit(lambda: back([True, False, False]))
            wgrad = timeit(lambda: back([False, True, False]))
        flops = 2 * y.numel() * c_in * k * k
        rows.append({"net": net, "batch": batch_, "c_in": c_in, "c_out": c_out, "k": k, "stride": stride, "side": side,
                     "out_side": y.shape[-1], "channels_last": channels_last, "flops": flops, "fwd_s": fwd,
                     "dgrad_s": dgrad, "wgrad_s": wgrad})
        print(f"{net} b{batch_} {c_in:>4}->{c_out:<4} k{k} s{stride} {side:>3}: fwd {fwd * 1e6:8.1f} us "
              f"({flops / fwd / 1e12:5.0f} TF/s)  dgrad {dgrad * 1e6:8.1f} ({flops / dgrad / 1e12:5.0f})  "
              f"wgrad {wgrad * 1e6:8.1f} ({flops / wgrad / 1e12:5.0f})", flush=True)
        del x, w, y, g
    return rows


if __name__ == "__main__":
    t0 = time.time()
    res = {"env": {"torch": torch.__version__, "name": "dry-cpu" if DRY else torch.cuda.get_device_name(0),
                   "cudnn_benchmark": torch.backends.cudnn.benchmark}, "rows": []}
    res["rows"] += run("resnet50", RESNET, 256, True)
    res["rows"] += run("resnet50", RESNET, 64, True)
    res["rows"] += run("unet", UNET, 16, False)
    res["env"]["total_s"] = time.time() - t0
    with open(f"{OUT}/conv_grads.json", "w") as f:
        json.dump(res, f, indent=1)
    print("done", round(time.time() - t0, 1), flush=True)
