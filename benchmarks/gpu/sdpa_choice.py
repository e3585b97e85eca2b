#!/usr/bin/env python3
"""Which kernel runs a transformers model's attention under torch.compile, and why.

transformers (before torch 2.14) never skips the attention mask while compiling: every layer's
scaled_dot_product_attention gets an explicit boolean mask. This script (1) runs each model eagerly with the mask
forced as a compile would build it (by patching transformers.masking_utils' compile check where it has one by
the names tried; transformers 5.17 had neither, so its calls in results/h200_sdpa_choice.json show no mask), recording for each call the mask's shape, dtype and strides, the dropout, and
the backend PyTorch's dispatcher picks (torch._fused_sdp_choice); (2) compiles each model's forward (inductor,
default mode) and lists the top kernels of one step, to see the backend that really ran. Writes
$OUT/sdpa_choice.json. DRY=1 checks it on the CPU.
"""
# each loop's closures run inside their own iteration, before its `del`:
# ruff: noqa: B023, F821
import json
import os
import time
import traceback

import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp")
DRY = os.environ.get("DRY") == "1"
dev = torch.device("cpu" if DRY else "cuda")
res = {"env": {"torch": torch.__version__}, "calls": {}, "compiled": {}, "errors": []}
BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def models():
    from transformers import (
        BertConfig,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        ViTConfig,
        ViTModel,
    )
    tiny = DRY
    yield "bert-base", lambda: BertModel(BertConfig(**(dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128) if tiny else {}))), "ids", 30522, 8, 128, True
    yield "gpt2-small", lambda: GPT2LMHeadModel(GPT2Config(use_cache=False, **(dict(n_layer=2, n_embd=64, n_head=2) if tiny else {}))), "ids", 50257, 8, 128, True
    yield "vit-base", lambda: ViTModel(ViTConfig(**(dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, image_size=32, patch_size=8) if tiny else {}))), "px", 0, 8, 224, True
    yield "llama-3.2-1b", lambda: LlamaForCausalLM(LlamaConfig(use_cache=False, **(dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128, vocab_size=1000) if tiny else dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, intermediate_size=8192, vocab_size=128256)))).to(torch.bfloat16), "ids", 1000 if tiny else 128256, 1, 512, False


def inputs(kind, vocab, b, s):
    if kind == "px":
        return {"pixel_values": torch.randn(b, 3, 32 if DRY else s, 32 if DRY else s, device=dev)}
    return {"input_ids": torch.randint(0, vocab, (b, 16 if DRY else s), device=dev)}


real_sdpa = F.scaled_dot_product_attention


def recording(store):
    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if len(store) < 2:
            entry = {"q": [list(q.shape), str(q.dtype), list(q.stride())], "dropout": dropout_p, "is_causal": is_causal,
                     "mask": None if attn_mask is None else [list(attn_mask.shape), str(attn_mask.dtype), list(attn_mask.stride())]}
            try:
                entry["choice"] = BACKENDS.get(torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa), "?")
                if attn_mask is not None:
                    entry["choice_without_mask"] = BACKENDS.get(torch._fused_sdp_choice(q, k, v, None, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa), "?")
                    entry["choice_float_mask"] = BACKENDS.get(torch._fused_sdp_choice(q, k, v, torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device).masked_fill(~attn_mask, -1e4) if attn_mask.dtype == torch.bool else attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa), "?")
            except Exception as e:  # noqa: BLE001
                entry["choice"] = f"error: {e}"[:300]
            store.append(entry)
        return real_sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return sdpa


def top_kernels(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU] + ([] if DRY else [ProfilerActivity.CUDA])) as prof:
        fn()
        if not DRY:
            torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", 0) or 0
        if t and e.key and not e.key.startswith(("##", "Torch-Compiled", "aten::", "autograd", "Compiled")):
            out[e.key[:100]] = [round(t / 1e3, 4), e.count]
    return dict(sorted(out.items(), key=lambda kv: -kv[1][0])[:10])


def probe():
    """The dispatcher's choice for BERT-base-shaped bf16 attention with each kind of mask."""
    q = torch.randn(8, 12, 128, 64, device=dev, dtype=torch.bfloat16)
    masks = {"none": None,
             "bool, contiguous (8,1,128,128)": torch.ones(8, 1, 128, 128, dtype=torch.bool, device=dev),
             "bool, expanded from (8,1,128,1) (last-dim stride 0)": torch.ones(8, 1, 128, 1, dtype=torch.bool, device=dev).expand(8, 1, 128, 128),
             "bool, expanded from (8,1,1,128) (query stride 0)": torch.ones(8, 1, 1, 128, dtype=torch.bool, device=dev).expand(8, 1, 128, 128),
             "bf16 additive, contiguous": torch.zeros(8, 1, 128, 128, dtype=torch.bfloat16, device=dev)}
    for name, mk in masks.items():
        for p in (0.0, 0.1):
            try:
                res.setdefault("probe", {})[f"{name}, dropout {p}"] = BACKENDS.get(torch._fused_sdp_choice(q, q, q, mk, p, False), "?")
            except Exception as e:  # noqa: BLE001
                res.setdefault("probe", {})[f"{name}, dropout {p}"] = f"error {e}"[:200]
    print(json.dumps(res.get("probe"), indent=1), flush=True)


def main():
    import transformers.masking_utils as mu
    t0 = time.time()
    probe()
    for name, make, kind, vocab, b, s, autocast in models():
        try:
            torch.manual_seed(0)
            with torch.device(dev):
                m = make().eval()
            x = inputs(kind, vocab, b, s)
            # (1) eager, mask forced as under compile
            store = []
            names = [n for n in ("is_torchdynamo_exporting", "is_torchdynamo_compiling") if hasattr(mu, n)]
            saved = {n: getattr(mu, n) for n in names}
            for n in names:
                setattr(mu, n, lambda: True)
            F.scaled_dot_product_attention = recording(store)
            try:
                with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
                    m(**x)
            except Exception as e:  # noqa: BLE001
                store.append({"error": str(e)[:300], "patched": names})
            finally:
                for n, f in saved.items():
                    setattr(mu, n, f)
                F.scaled_dot_product_attention = real_sdpa
            res["calls"][name] = store
            print(name, store[:1], flush=True)
            # (2) compiled forward: which kernels ran
            cm = torch.compile(m, backend="eager" if DRY else "inductor")

            def step():
                with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
                    cm(**x)
            tc = time.time()
            step()
            comp = time.time() - tc
            for _ in range(3):
                step()
            if not DRY:
                torch.cuda.synchronize()
            ts = []
            for _ in range(10):
                if DRY:
                    t = time.perf_counter()
                    step()
                    ts.append(time.perf_counter() - t)
                    continue
                s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s_.record()
                step()
                e_.record()
                torch.cuda.synchronize()
                ts.append(s_.elapsed_time(e_) / 1e3)
            ts.sort()
            res["compiled"][name] = {"batch": b, "seq": s, "median_s": ts[len(ts) // 2], "compile_s": comp,
                                     "kernels": top_kernels(step)}
            print(f"  compiled {name}: {ts[len(ts) // 2] * 1e3:.3f} ms, compile {comp:.1f} s  [{time.time() - t0:.0f}s]", flush=True)
            for k, v in list(res["compiled"][name]["kernels"].items())[:6]:
                print(f"      {v}  {k}", flush=True)
            del m, cm
            torch._dynamo.reset()
        except Exception:
            res["errors"].append({"model": name, "trace": traceback.format_exc()[-2500:]})
            print(res["errors"][-1]["trace"], flush=True)
        with open(f"{OUT}/sdpa_choice.json", "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
