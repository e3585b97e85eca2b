#!/usr/bin/env python3
"""What eager PyTorch's backward costs the host, per op, beside its forward, on the same machine.

A chain of 200 tiny layers (nn.Linear(64, 64) and a ReLU, batch 1: the GPU idles, the host is the bound), timed
with the wall clock after a synchronize: the forward without autograd, the forward recording autograd's graph, and
the backward; each in fp32 and under bf16 autocast. Then BERT-base (transformers) at batch 1 x 128: an inference
forward, and a training step (forward, backward, fused AdamW), host-bound both. Median of 7 rounds. Writes
$OUT/host_backward.json. DRY=1 runs it on the CPU.
"""
import json
import os
import time

import torch
from torch import nn

OUT = os.environ.get("OUT", "/tmp")
DRY = os.environ.get("DRY") == "1"
dev = torch.device("cpu" if DRY else "cuda")


def sync():
    if not DRY:
        torch.cuda.synchronize()


def wall(fn, rounds=7):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    res = {"env": {"torch": torch.__version__, "name": "dry-cpu" if DRY else torch.cuda.get_device_name(0)}, "chain": {}, "bert": {}}
    depth = 200
    net = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(64, 64), nn.ReLU())]).to(dev)
    x = torch.randn(1, 64, device=dev)
    for amp in (False, True):
        tag = "bf16 autocast" if amp else "fp32"

        def fwd_nograd(amp=amp):
            with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
                net(x)

        def fwd_grad(amp=amp):
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
                return net(x).sum()

        def fwd_bwd():
            fwd_grad().backward()
        a, b, c = wall(fwd_nograd), wall(fwd_grad), wall(fwd_bwd)
        res["chain"][tag] = {"layers": depth, "forward_no_grad_s": a, "forward_s": b, "forward_backward_s": c,
                             "backward_s": c - b}
        print(f"{tag}: per layer forward (no grad) {a / depth * 1e6:.1f} us, forward {b / depth * 1e6:.1f} us, "
              f"backward {(c - b) / depth * 1e6:.1f} us", flush=True)
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(**(dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128) if DRY else {}))
    torch.manual_seed(0)
    with torch.device(dev):
        m = BertForMaskedLM(cfg)
    ids = torch.randint(0, 30522, (1, 128), device=dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=not DRY)

    def infer():
        m.eval()
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
            m(input_ids=ids)

    def train():
        m.train()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = m(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()

    def fwd_train():
        m.train()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            return m(input_ids=ids, labels=ids).loss
    res["bert"] = {"batch": 1, "seq": 128, "infer_s": wall(infer), "train_forward_s": wall(fwd_train),
                   "train_step_s": wall(train)}
    print("bert-base MLM b1 x 128:", {k: round(v * 1e3, 2) for k, v in res["bert"].items() if k.endswith("_s")}, "ms",
          flush=True)
    with open(f"{OUT}/host_backward.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
