#!/bin/sh
# bench_embed.sh PYTHON [GPUPORT] - all-MiniLM-L6-v2 throughput: `gpuport bench embed`
# beside the reference library (scripts/minilm/bench_reference.py run by PYTHON, an
# interpreter with requirements-reference.txt installed) on the same machine, in the same
# run, same batches (1 and 64 sentences of 128 tokens), f32 and bf16. Prints both JSON
# documents and a Markdown table for docs/PERFORMANCE.md.
# Environment: ITERS (default 5), DEVICE (the reference's torch device: cpu or cuda).
set -e
py=${1:?usage: $0 PYTHON [GPUPORT]}
gpuport=${2:-bin/gpuport}
iters=${ITERS:-5}
device=${DEVICE:-cpu}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$gpuport" bench embed --json --iters "$iters" > "$out/gpuport.json"
HF_HUB_OFFLINE=1 "$py" scripts/minilm/bench_reference.py --iters "$iters" --device "$device" > "$out/ref.json"
cat "$out/gpuport.json" "$out/ref.json"
"$py" - "$out/gpuport.json" "$out/ref.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
ref = {(x["dtype"], x["batch"]): x for x in r["results"]}
print(f"\n| dtype | batch x tokens | gpuport ({g['backend']}) sentences/s | tokens/s "
      f"| {r['library']} ({r['device']}, {r['threads']} threads) sentences/s | tokens/s | ratio |")
print("|---|---|---|---|---|---|---|")
for x in g["results"]:
    y = ref.get((x["dtype"], x["batch"]))
    if y:
        print(f"| {x['dtype']} | {x['batch']} x {x['seqlen']} | {x['sentences_per_s']:.2f} | "
              f"{x['tokens_per_s']:.0f} | {y['sentences_per_s']:.2f} | {y['tokens_per_s']:.0f} | "
              f"{x['tokens_per_s'] / y['tokens_per_s']:.2f} |")
PY
