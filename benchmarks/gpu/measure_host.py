#!/usr/bin/env python3
"""The host's share of an eager step, how torch.compile runs a transformer's attention, and Llama-3-8B decode steps.

Three questions the earlier files could not answer (``measure_more.py`` found the same eager BERT-base step at
4.75, 6.22, 6.83 and 8.54 ms on four machines):

- ``host``: what one eager op costs the host on this machine, apart from any model: a bare ``torch.add`` on a tiny
  CUDA tensor, a tiny ``nn.Linear`` module call, a tiny ``F.linear``, each in a Python loop with the GPU idle,
  and a pure-Python loop (the CPU's single-thread speed). Beside them, eager inference of BERT-base, BERT-large and
  GPT-2 small at batch 1 (bound by the host), so that a model's step can be set against the bare op's cost on the
  same machine;
- ``attention``: which kernel PyTorch runs for scaled_dot_product_attention with and without a mask, in eager and
  under ``torch.compile`` (the backend chosen, from the profiler's kernel names, and the step's time);
- ``decode``: Llama-3-8B decode steps with a static KV cache, eager and captured in a CUDA graph (the script of
  ``shared/reference/gpu_measured/measure.py``, whose decode rows the first file did not publish), and a
  Hugging Face ``generate`` token in eager PyTorch.

Writes ``$OUT/gpu_measured_host.json``. ``DRY=1`` runs tiny shapes on the CPU to check the script before device
time. ``DEADLINE`` (seconds, default 400) skips what would start after it.
"""
# each loop's closures run inside their own iteration, before its `del`:
# ruff: noqa: B023, F821
import json
import os
import time
import traceback

import torch
import torch.nn.functional as F
from torch import nn

OUT = os.environ.get("OUT", "/tmp")
DRY = os.environ.get("DRY") == "1"
DEADLINE = float(os.environ.get("DEADLINE", "400"))
T0 = time.time()
dev = torch.device("cpu" if DRY else "cuda")
res = {"env": {}, "host": [], "models": [], "attention": [], "decode": [], "errors": [], "skipped": []}


def save():
    with open(f"{OUT}/gpu_measured_host.json", "w") as f:
        json.dump(res, f, indent=1)


def sync():
    if not DRY:
        torch.cuda.synchronize()


def timeit(fn, warm=3, iters=10):
    """Median, best and all of ``iters`` timings (CUDA events on a GPU, wall clock on the dry run)."""
    for _ in range(warm if not DRY else 1):
        fn()
    sync()
    ts = []
    for _ in range(iters if not DRY else 2):
        if DRY:
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
            continue
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts


def section(name, need):
    def deco(f):
        def run():
            if DEADLINE - (time.time() - T0) < need:
                res["skipped"].append(name)
                print(f"[{name}] skipped (deadline)", flush=True)
                return
            t0 = time.time()
            try:
                f()
            except Exception:
                res["errors"].append({"section": name, "trace": traceback.format_exc()[-3000:]})
            print(f"[{name}] {time.time() - t0:.1f}s", flush=True)
            if not DRY:
                torch.cuda.empty_cache()
            save()
        return run
    return deco


def wall_per_call(fn, n):
    """Host seconds per call of ``fn`` over ``n`` calls (the GPU idle: tiny tensors), median of 5 rounds."""
    for _ in range(n // 10):
        fn()
    sync()
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t) / n)
        sync()
    rounds.sort()
    return rounds[2], rounds[0], rounds[-1]


@section("host", 20)
def host():
    x = torch.ones(8, device=dev)
    lin = nn.Linear(8, 8).to(dev)
    w = torch.ones(8, 8, device=dev)
    n = 200 if DRY else 4000
    for what, fn in (("torch.add on an 8-element tensor", lambda: torch.add(x, 1.0)),
                     ("F.linear 8x8", lambda: F.linear(x, w)),
                     ("nn.Linear(8, 8) module call", lambda: lin(x)),
                     ("bf16 cast of an 8-element tensor", lambda: x.to(torch.bfloat16))):
        med, lo, hi = wall_per_call(fn, n)
        res["host"].append({"what": what, "median_s": med, "min_s": lo, "max_s": hi})
        print(f"  {what:<36} {med * 1e6:7.2f} us  ({lo * 1e6:.2f}-{hi * 1e6:.2f})", flush=True)

    def py():
        s = 0
        for i in range(200_000):
            s += i * i
        return s
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        py()
        t.append(time.perf_counter() - t0)
    t.sort()
    res["host"].append({"what": "pure-Python loop, 200,000 multiply-adds", "median_s": t[2], "min_s": t[0], "max_s": t[-1]})
    print(f"  python loop {t[2] * 1e3:.2f} ms", flush=True)


def hf_model(name):
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    small = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128)
    torch.manual_seed(0)
    with torch.device(dev):
        if name == "bert-base":
            return BertModel(BertConfig(**(small if DRY else {}))).eval(), 30522
        if name == "bert-large":
            return BertModel(BertConfig(**(small if DRY else dict(hidden_size=1024, num_hidden_layers=24,
                                                                   num_attention_heads=16, intermediate_size=4096)))).eval(), 30522
        return GPT2LMHeadModel(GPT2Config(use_cache=False, **(dict(n_layer=2, n_embd=64, n_head=2) if DRY else {}))).eval(), 50257


@section("models", 40)
def models():
    for name, b, s in (("bert-base", 1, 128), ("bert-large", 1, 128), ("gpt2-small", 1, 128), ("bert-base", 1, 128)):
        m, vocab = hf_model(name)
        ids = torch.randint(0, vocab, (b, 16 if DRY else s), device=dev)

        def step():
            with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
                m(input_ids=ids)
        med, best, ts = timeit(step, 5, 15)
        res["models"].append({"case": f"infer-{name}-b{b}-s{s}", "stack": "eager", "median_s": med, "best_s": best,
                              "spread": (ts[-1] - ts[0]) / med})
        print(f"  infer-{name}-b{b}-s{s}  {med * 1e3:.3f} ms (best {best * 1e3:.3f})", flush=True)
        del m


def kernel_names(fn):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([] if DRY else [ProfilerActivity.CUDA])
    with profile(activities=acts) as prof:
        fn()
        sync()
    out = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)
        if t and e.key:
            out[e.key[:110]] = round(t / 1e3, 4)  # ms
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:14])


@section("attention", 120)
def attention():
    """BERT-base inference at batch 32 x 128 and training at 8 x 512, eager and torch.compile (default mode), with
    the top kernels of one step: which attention kernel ran, and in what precision its matmuls ran."""
    from transformers import BertConfig, BertForMaskedLM, BertModel
    cfg = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128) if DRY else BertConfig()
    for training, b, s in ((False, 32, 128), (True, 8, 512)):
        if DRY:
            b, s = 2, 16
        torch.manual_seed(0)
        with torch.device(dev):
            m = (BertForMaskedLM if training else BertModel)(cfg).train(training)
        ids = torch.randint(0, 30522, (b, s), device=dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=not DRY) if training else None
        for stack in ("eager", "compiled"):
            if DEADLINE - (time.time() - T0) < 60:
                res["skipped"].append(f"attention {training} {stack}")
                continue
            run_model = torch.compile(m, backend="eager" if DRY else "inductor") if stack == "compiled" else m

            def step():
                if training:
                    opt.zero_grad(set_to_none=True)
                    with torch.autocast(dev.type, dtype=torch.bfloat16):
                        loss = run_model(input_ids=ids, labels=ids).loss
                    loss.backward()
                    opt.step()
                else:
                    with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
                        run_model(input_ids=ids)
            tc = time.time()
            step()
            sync()
            first = time.time() - tc
            med, best, ts = timeit(step, 3, 10)
            kern = kernel_names(step)
            tag = f"{stack}-{'train-bert-base-mlm' if training else 'infer-bert-base'}-b{b}-s{s}"
            res["attention"].append({"case": tag, "median_s": med, "best_s": best, "first_call_s": first, "kernels_ms": kern})
            print(f"  {tag}: {med * 1e3:.3f} ms (first call {first:.1f} s)", flush=True)
            for k, v in list(kern.items())[:8]:
                print(f"      {v:8.3f} ms  {k}", flush=True)
        del m, opt
        torch._dynamo.reset()


LLAMA8B = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=14336, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192)


@section("decode", 60)
def decode():
    """measure.py's decode section (Llama-3-8B, random bf16 weights): a hand-written step over a static KV cache,
    eager and replayed as a CUDA graph; then transformers' generate, eager, per new token."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg_d = dict(LLAMA8B, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=256, vocab_size=1000) if DRY else LLAMA8B
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(dev):
        model = LlamaForCausalLM(LlamaConfig(**cfg_d)).eval()
    torch.set_default_dtype(torch.float32)
    # transformers' generate, eager: time for 1 new token and for 33, per extra token
    with torch.no_grad():
        for b, ctx in (((1, 16),) if DRY else ((1, 256), (16, 256))):
            ids = torch.randint(0, cfg_d["vocab_size"], (b, ctx), device=dev)
            kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
            t = {}
            for new in (1, 33):
                def gen():
                    model.generate(ids, max_new_tokens=new, min_new_tokens=new, **kw)
                med, best, _ = timeit(gen, 1, 3 if not DRY else 1)
                t[new] = med
            res["decode"].append({"model": "llama-3-8b", "how": "transformers generate, eager, DynamicCache", "batch": b,
                                  "context": ctx, "per_token_s": (t[33] - t[1]) / 32, "first_token_s": t[1]})
            print(f"  generate b{b} ctx{ctx}: {(t[33] - t[1]) / 32 * 1e3:.3f} ms/token (first {t[1] * 1e3:.1f} ms)", flush=True)
            save()
    cfg = model.config
    H, KV, D, L_ = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads, cfg.num_hidden_layers
    layers = model.model.layers
    Wqkv = [torch.cat([lyr.self_attn.q_proj.weight, lyr.self_attn.k_proj.weight, lyr.self_attn.v_proj.weight]) for lyr in layers]
    Wo = [lyr.self_attn.o_proj.weight for lyr in layers]
    Wgu = [torch.cat([lyr.mlp.gate_proj.weight, lyr.mlp.up_proj.weight]) for lyr in layers]
    Wd = [lyr.mlp.down_proj.weight for lyr in layers]
    n1 = [lyr.input_layernorm.weight for lyr in layers]
    n2 = [lyr.post_attention_layernorm.weight for lyr in layers]
    emb = model.model.embed_tokens.weight
    head = model.lm_head.weight
    nf = model.model.norm.weight
    for lyr in layers:
        for mod in (lyr.self_attn.q_proj, lyr.self_attn.k_proj, lyr.self_attn.v_proj, lyr.mlp.gate_proj, lyr.mlp.up_proj):
            mod.weight = None
    if not DRY:
        torch.cuda.empty_cache()
    inter = cfg.intermediate_size
    Bmax, Lmax = (4, 64) if DRY else (64, 2048)
    kc = [torch.zeros(Bmax, KV, Lmax, D, dtype=torch.bfloat16, device=dev) for _ in range(L_)]
    vc = [torch.zeros(Bmax, KV, Lmax, D, dtype=torch.bfloat16, device=dev) for _ in range(L_)]

    def rms(x, w):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w

    def rope(t, cos, sin):
        t1, t2 = t[..., : D // 2], t[..., D // 2:]
        return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], -1)

    for b, ctx in (((1, 16), (4, 64)) if DRY else ((1, 256), (1, 2048), (16, 256), (16, 2048), (64, 256), (64, 2048))):
        tok = torch.randint(0, cfg.vocab_size, (b,), device=dev)
        pos = torch.tensor([ctx - 1], device=dev)
        inv = 1.0 / (LLAMA8B["rope_theta"] ** (torch.arange(0, D, 2, device=dev).float() / D))
        ang = (ctx - 1) * inv
        cos, sin = ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)

        def step():
            x = emb[tok]
            for i in range(L_):
                h = rms(x, n1[i])
                qkv = F.linear(h, Wqkv[i])
                q = qkv[:, : H * D].view(b, KV, H // KV, D)
                k = qkv[:, H * D: H * D + KV * D].view(b, KV, D)
                v = qkv[:, H * D + KV * D:].view(b, KV, D)
                q, k = rope(q, cos, sin), rope(k, cos, sin)
                kc[i][:b].index_copy_(2, pos, k.unsqueeze(2))
                vc[i][:b].index_copy_(2, pos, v.unsqueeze(2))
                K = kc[i][:b, :, :ctx]
                V = vc[i][:b, :, :ctx]
                s = torch.matmul(q, K.transpose(-1, -2)) * (D ** -0.5)
                a = torch.matmul(torch.softmax(s.float(), -1).to(torch.bfloat16), V)
                x = x + F.linear(a.reshape(b, H * D), Wo[i])
                h = rms(x, n2[i])
                gu = F.linear(h, Wgu[i])
                x = x + F.linear(F.silu(gu[:, :inter]) * gu[:, inter:], Wd[i])
            return F.linear(rms(x, nf), head).argmax(-1)

        with torch.no_grad():
            if DRY:
                assert step().shape == (b,)
                res["decode"].append({"batch": b, "context": ctx, "dry": True})
                continue
            s_ = torch.cuda.Stream()
            s_.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s_):
                for _ in range(2):
                    step()
            torch.cuda.current_stream().wait_stream(s_)
            eager_med, eager_best, _ = timeit(step, 1, 5)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                step()
            med, best, _ = timeit(g.replay, 3, 20)
        res["decode"].append({"model": "llama-3-8b", "how": "hand-written step, static KV cache", "batch": b,
                              "context": ctx, "graph_median_s": med, "graph_best_s": best, "eager_median_s": eager_med,
                              "weights_bytes": 2 * sum(t.numel() for t in Wqkv + Wo + Wgu + Wd) + 2 * head.numel(),
                              "kv_bytes_read": 2 * L_ * b * KV * ctx * D * 2})
        print(f"  decode b{b} ctx{ctx}: graph {med * 1e3:.3f} ms, eager {eager_med * 1e3:.3f} ms", flush=True)
        del g
        save()


if __name__ == "__main__":
    if DRY:
        res["env"] = {"name": "dry-cpu", "torch": torch.__version__}
    else:
        p = torch.cuda.get_device_properties(0)
        res["env"] = {"name": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
                      "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), ""),
                      "cpus": os.cpu_count()}
    try:
        import transformers
        res["env"]["transformers"] = transformers.__version__
    except Exception:
        pass
    print(res["env"], flush=True)
    for f in (host, models, decode, attention):
        f()
    res["env"]["total_s"] = time.time() - T0
    save()
    print("done", round(time.time() - T0, 1), "errors:", len(res["errors"]), "skipped:", res["skipped"], flush=True)
    for e in res["errors"]:
        print(e["section"], e["trace"][-1500:], flush=True)
