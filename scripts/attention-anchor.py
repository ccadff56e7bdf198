#!/usr/bin/env python3
"""attention-anchor.py OUTDIR TOOL - gpuport's attention beside PyTorch's.

Runs `TOOL bench attention --json` (TOOL: bin/gpuport-cuda) and PyTorch's
torch.nn.functional.scaled_dot_product_attention restricted to its FlashAttention
backend on the same shapes, forward and backward: FlashAttention-2's benchmark sweep
(2048-wide model, so 32 heads at head_dim 64 and 16 at 128; batch x seqlen = 16k tokens;
seqlen 1k to 16k; causal and not; bf16). TFLOP/s count 4 * batch * heads * seqlen^2 *
head_dim for the forward (halved when causal) and 2.5 times that for the backward, as
the FlashAttention benchmarks and `gpuport bench attention` do.

Writes OUTDIR/attention-anchor.json (every row, with the kernels gpuport ran) and
OUTDIR/attention-anchor.md (the table for docs/PERFORMANCE.md). Without PyTorch or a
CUDA device it still runs gpuport's side and leaves the PyTorch column empty, saying
why. Environment: ITERS (default 10), WARMUP (default 2), SEQLENS (default "1024 2048
4096 8192 16384"), HEAD_DIMS ("64 128"), TOKENS (batch x seqlen, default 16384), WIDTH
(heads x head_dim, default 2048), GATES ("0": gpuport as it chooses; "0 1" also times
the forward with GP_ENABLE_SM90A=1, the gated sm_90a kernels, in the column
gpuport_sm90a_tflops; the backward has no sm_90a kernel).
"""
import json
import os
import subprocess
import sys


def gpuport(tool, b, s, h, d, causal, backward, iters, warmup, gate="0"):
    cmd = [tool, "bench", "attention", "--json", "--batch", str(b), "--seqlen", str(s),
           "--heads", str(h), "--kv-heads", str(h), "--head-dim", str(d), "--causal",
           str(causal), "--dtype", "bf16", "--iters", str(iters), "--warmup", str(warmup)]
    if backward:
        cmd.append("--backward")
    env = dict(os.environ, GP_ENABLE_SM90A=gate)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or ["rc %d" % out.returncode])[-1]
    try:
        rows = json.loads(out.stdout)["results"]
        return (rows[0]["tflops"], rows[0]["median_ms"], rows[0].get("kernels", "")), None
    except (ValueError, KeyError, IndexError) as e:
        return None, "unreadable output: %s" % e


def torch_setup():
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # no PyTorch, or one without torch.nn.attention
        return None, "PyTorch not usable: %s" % e
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"
    return (torch, SDPBackend, sdpa_kernel), None


def torch_time(mods, b, s, h, d, causal, backward, iters, warmup):
    torch, SDPBackend, sdpa_kernel = mods
    F = torch.nn.functional
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16,
                           requires_grad=backward) for _ in range(3))
    times = []
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        if backward:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            g = torch.randn_like(o)
            run = lambda: o.backward(g, retain_graph=True)
        else:
            run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        for _ in range(warmup):
            run()
        for _ in range(iters):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            run()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
    times.sort()
    ms = times[len(times) // 2]
    flops = 4.0 * b * h * s * s * d / (2 if causal else 1) * (2.5 if backward else 1.0)
    return flops / ms * 1e-9, ms


def write_json(outdir, rows):
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "attention-anchor.json")
    with open(path + ".tmp", "w") as f:
        json.dump(rows, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    outdir, tool = sys.argv[1], sys.argv[2]
    iters, warmup = int(os.environ.get("ITERS", "10")), int(os.environ.get("WARMUP", "2"))
    seqlens = [int(x) for x in os.environ.get("SEQLENS", "1024 2048 4096 8192 16384").split()]
    dims = [int(x) for x in os.environ.get("HEAD_DIMS", "64 128").split()]
    tokens, width = int(os.environ.get("TOKENS", "16384")), int(os.environ.get("WIDTH", "2048"))
    gates = os.environ.get("GATES", "0").split()
    mods, why = torch_setup()
    if why:
        print("attention-anchor: %s: the PyTorch column stays empty" % why, file=sys.stderr)
    rows = []
    for d in dims:
        h = width // d
        for s in seqlens:
            b = max(1, tokens // s)
            for causal in (0, 1):
                for backward in (0, 1):
                    ours, err = gpuport(tool, b, s, h, d, causal, backward, iters, warmup)
                    ref, rerr = (None, why)
                    if mods:
                        try:
                            ref, rerr = torch_time(mods, b, s, h, d, causal, backward, iters, warmup), None
                        except Exception as e:  # e.g. out of memory, unsupported head_dim
                            ref, rerr = None, str(e).splitlines()[0]
                    row = {"batch": b, "seqlen": s, "heads": h, "head_dim": d, "causal": causal,
                           "pass": "bwd" if backward else "fwd",
                           "gpuport_tflops": ours[0] if ours else None, "gpuport_error": err,
                           "gpuport_kernels": ours[2] if ours else None,
                           "torch_flash_tflops": ref[0] if ref else None, "torch_error": rerr}
                    if ours and ref:
                        row["ratio"] = ours[0] / ref[0]
                    if "1" in gates and not backward:
                        gated, gerr = gpuport(tool, b, s, h, d, causal, backward, iters, warmup, "1")
                        row["gpuport_sm90a_tflops"] = gated[0] if gated else None
                        row["gpuport_sm90a_kernels"] = gated[2] if gated else None
                        row["gpuport_sm90a_error"] = gerr
                        if gated and ref:
                            row["sm90a_ratio"] = gated[0] / ref[0]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    write_json(outdir, rows)  # after every row: a run cut short keeps what it measured
    write_json(outdir, rows)
    with open(os.path.join(outdir, "attention-anchor.md"), "w") as f:
        f.write("| head_dim | seqlen x batch | causal | pass | gpuport TFLOP/s | "
                "gpuport sm_90a TFLOP/s | PyTorch SDPA flash TFLOP/s | ratio |\n"
                "|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            fmt = lambda x: "%.1f" % x if x is not None else "-"
            f.write("| %d | %d x %d | %s | %s | %s | %s | %s | %s |\n" % (
                r["head_dim"], r["seqlen"], r["batch"], "yes" if r["causal"] else "no", r["pass"],
                fmt(r["gpuport_tflops"]), fmt(r.get("gpuport_sm90a_tflops")),
                fmt(r["torch_flash_tflops"]), "%.2f" % r["ratio"] if "ratio" in r else "-"))
    return 0 if all(r["gpuport_tflops"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
