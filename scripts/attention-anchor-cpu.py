#!/usr/bin/env python3
"""attention-anchor-cpu.py [TOOL] - the cpu backend's attention beside PyTorch's CPU SDPA.

Runs `TOOL bench attention --json` (TOOL: bin/gpuport-cpu) and
torch.nn.functional.scaled_dot_product_attention on the CPU (PyTorch picks its CPU
flash-attention kernel for these shapes) on the same shapes, dtypes and thread count,
alternating the two (gpuport, torch, gpuport, torch, ...) so a machine whose speed drifts
affects both alike; the ratio is taken pair by pair and its median printed.

Prints one line per shape: gpuport ms, torch ms (medians over the pairs), the ratio
gpuport / torch (below 1: gpuport faster) and the PyTorch version. Without PyTorch it
says why and prints gpuport's figures alone.

Environment: THREADS (default 1: GP_CPU_THREADS for gpuport, torch.set_num_threads for
PyTorch), PAIRS (alternations, default 3), ITERS (timed runs per side and pair, median;
default 3), WARMUP (default 1), ROWS (shapes, default the four below, as
"fwd|bwd:dtype:head_dim:seqlen:causal" separated by spaces), BATCH (1), HEADS (8).
"""
import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT_ROWS = "fwd:f32:64:1024:0 fwd:f32:64:1024:1 fwd:bf16:128:2048:0 bwd:f32:64:2048:0"


def parse_rows(text):
    rows = []
    for r in text.split():
        kind, dtype, d, s, causal = r.split(":")
        rows.append((kind, dtype, int(d), int(s), int(causal)))
    return rows


def gpuport(tool, kind, dtype, b, h, d, s, causal, threads, iters, warmup):
    cmd = [tool, "bench", "attention", "--json", "--batch", str(b), "--seqlen", str(s),
           "--heads", str(h), "--kv-heads", str(h), "--head-dim", str(d), "--causal",
           str(causal), "--dtype", dtype, "--iters", str(iters), "--warmup", str(warmup)]
    if kind == "bwd":
        cmd.append("--backward")
    env = dict(os.environ, GP_CPU_THREADS=str(threads))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), out.stderr.strip()[-300:]))
    row = json.loads(out.stdout)["results"][0]
    return row["median_ms"], row.get("kernels", "")


def torch_setup(threads):
    try:
        import torch
    except Exception as e:  # no PyTorch, or a broken one
        return None, "PyTorch not usable: %s" % e
    torch.set_num_threads(threads)
    return torch, None


def torch_ms(torch, kind, dtype, b, h, d, s, causal, iters, warmup):
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(b, h, s, d, generator=g).to(dt) for _ in range(3))
    if kind == "bwd":
        for x in (q, k, v):
            x.requires_grad_(True)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        grad = torch.randn_like(out)

        def step():
            torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
    else:
        def step():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
    for _ in range(warmup):
        step()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    tool = sys.argv[1] if len(sys.argv) > 1 else "bin/gpuport-cpu"
    threads = int(os.environ.get("THREADS", "1"))
    pairs = int(os.environ.get("PAIRS", "3"))
    iters = int(os.environ.get("ITERS", "3"))
    warmup = int(os.environ.get("WARMUP", "1"))
    b = int(os.environ.get("BATCH", "1"))
    h = int(os.environ.get("HEADS", "8"))
    rows = parse_rows(os.environ.get("ROWS", DEFAULT_ROWS))
    torch, why = torch_setup(threads)
    version = torch.__version__ if torch else "-"
    print("# gpuport cpu attention vs PyTorch %s CPU SDPA: batch %d, heads %d, %d thread(s), "
          "%d pairs x median of %d" % (version, b, h, threads, pairs, iters))
    if why:
        print("# " + why)
    print("%-4s %-5s %4s %6s %6s %12s %12s %8s  %s" % ("op", "dtype", "d", "seqlen", "causal",
                                                       "gpuport ms", "torch ms", "ratio", "kernel"))
    for kind, dtype, d, s, causal in rows:
        ours, theirs, ratios, kern = [], [], [], ""
        for _ in range(pairs):
            ms, kern = gpuport(tool, kind, dtype, b, h, d, s, causal, threads, iters, warmup)
            ours.append(ms)
            if torch:
                t = torch_ms(torch, kind, dtype, b, h, d, s, causal, iters, warmup)
                theirs.append(t)
                ratios.append(ms / t)
        tm = "%12.1f" % statistics.median(theirs) if theirs else "%12s" % "-"
        rt = "%8.2f" % statistics.median(ratios) if ratios else "%8s" % "-"
        print("%-4s %-5s %4d %6d %6d %12.1f %s %s  %s" % (kind, dtype, d, s, causal,
                                                         statistics.median(ours), tm, rt, kern))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
