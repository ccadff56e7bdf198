#!/bin/sh
# bench_embed.sh PYTHON [GPUPORT] - all-MiniLM-L6-v2 throughput: `gpuport bench embed`
# beside the reference library (scripts/minilm/bench_reference.py run by PYTHON, an
# interpreter with requirements-reference.txt installed) on the same machine, in the same
# run, same batches (1 and 64 sentences of 128 tokens), f32 and bf16. Prints both JSON
# documents and a Markdown table for docs/PERFORMANCE.md.
# Environment: ITERS (default 5), DEVICE (the reference's torch device: cpu or cuda),
# THREADS (both sides on that many threads: GP_CPU_THREADS, OPENBLAS_NUM_THREADS,
# OMP_NUM_THREADS and torch.set_num_threads; default: each library's own default),
# BATCH (default "1 64"), DTYPES (default "f32 bf16").
set -e
py=${1:?usage: $0 PYTHON [GPUPORT]}
gpuport=${2:-bin/gpuport}
iters=${ITERS:-5}
device=${DEVICE:-cpu}
batches=${BATCH:-1 64}
dtypes=${DTYPES:-f32 bf16}
ref_threads=
if [ -n "${THREADS:-}" ]; then
  export GP_CPU_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
  ref_threads="--threads $THREADS"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gargs=  # bench embed takes one batch and one dtype, or runs both defaults
[ "$batches" = "1 64" ] || gargs="--batch $batches"
[ "$dtypes" = "f32 bf16" ] || gargs="$gargs --dtype $dtypes"
# shellcheck disable=SC2086
"$gpuport" bench embed --json --iters "$iters" $gargs > "$out/gpuport.json"
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 "$py" scripts/minilm/bench_reference.py --iters "$iters" --device "$device" \
  --batch $batches --dtype $dtypes $ref_threads > "$out/ref.json"
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
