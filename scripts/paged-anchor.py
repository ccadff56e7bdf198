#!/usr/bin/env python3
"""paged-anchor.py BENCH_JSON OUT_JSON - PyTorch's SDPA beside `bench attention --paged`.

For every row of BENCH_JSON (the output of `gpuport bench attention --paged --json`),
times torch.nn.functional.scaled_dot_product_attention on dense K/V of the same shape:
batch x heads_kv x context keys (the row's context, the appended tokens included), the
row's seqlen_q queries, causal aligned to the end of the keys as gpuport's kvcache call
is, GQA by expanding the key/value heads (what a caller without GQA support does) unless
this PyTorch takes enable_gqa. SDPA reads contiguous K/V, so its time is a bound of what
paging costs (issue: paged within 10% of dense). Writes OUT_JSON: {"rows": [{batch,
context, seqlen_q, sdpa_ms}], "torch": version} or {"error": why} without PyTorch or a
CUDA device. Environment: ITERS (default 10), WARMUP (default 2).
"""
import json
import os
import sys


def heads_of(shape):
    # "b1 ctx64 q1 h32/8 d128 p16" -> (32, 8, 128)
    parts = dict((p[0], p[1:]) for p in shape.split() if p[:1] in "hd")
    hq, hkv = parts["h"].split("/")
    return int(hq), int(hkv), int(parts["d"])


def sdpa_ms(torch, row, iters, warmup):
    F = torch.nn.functional
    hq, hkv, d = heads_of(row["shape"])
    b, ctx, sq = row["batch"], row["context"], row["seqlen_q"]
    dt = torch.bfloat16 if row.get("dtype", "bf16") == "bf16" else torch.float16
    q = torch.randn(b, hq, sq, d, device="cuda", dtype=dt)
    k = torch.randn(b, hkv, ctx, d, device="cuda", dtype=dt)
    v = torch.randn_like(k)
    # bottom-right causal: query i sees keys 0 .. ctx - sq + i
    mask = None
    if sq > 1:
        i = torch.arange(sq, device="cuda").unsqueeze(1)
        j = torch.arange(ctx, device="cuda").unsqueeze(0)
        mask = j <= i + (ctx - sq)
    try:
        run = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        run()
    except TypeError:  # a PyTorch without enable_gqa: expand the key/value heads
        ke, ve = (x.repeat_interleave(hq // hkv, dim=1) for x in (k, v))
        run = lambda: F.scaled_dot_product_attention(q, ke, ve, attn_mask=mask)
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return times[len(times) // 2]


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        rows = json.load(f)["results"]
    out = {}
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        iters, warmup = int(os.environ.get("ITERS", "10")), int(os.environ.get("WARMUP", "2"))
        out["torch"] = torch.__version__
        out["rows"] = [{"batch": r["batch"], "context": r["context"], "seqlen_q": r["seqlen_q"],
                        "sdpa_ms": sdpa_ms(torch, r, iters, warmup)} for r in rows]
    except Exception as e:  # no PyTorch, no device, or a failing call: say why
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out)[:400])
    return 0


if __name__ == "__main__":
    sys.exit(main())
