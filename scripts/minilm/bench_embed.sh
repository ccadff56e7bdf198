#!/bin/sh
# bench_embed.sh PYTHON [GPUPORT] - all-MiniLM-L6-v2 throughput: `gpuport bench embed`
# beside the reference library (scripts/minilm/bench_reference.py run by PYTHON, an
# interpreter with requirements-reference.txt installed) on the same machine, in the same
# run, same batches (1 and 64 sentences of 128 tokens), f32 and bf16. Prints both JSON
# documents and a Markdown table for docs/PERFORMANCE.md.
# Environment: ITERS (default 5), DEVICE (the reference's torch device: cpu or cuda),
# THREADS (both sides on that many threads: GP_CPU_THREADS, OPENBLAS_NUM_THREADS,
# OMP_NUM_THREADS and torch.set_num_threads; default: each library's own default),
# BATCH (default "1 64"), DTYPES (default "f32 bf16"), ROUNDS (default 2: the two sides
# run in the order gpuport, reference, reference, gpuport, ..., and the table takes each
# side's best round, so a slow spell of a shared machine does not land on one side only).
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
rounds=${ROUNDS:-2}
run_gpuport() {
  # shellcheck disable=SC2086
  "$gpuport" bench embed --json --iters "$iters" $gargs > "$out/gpuport.$1.json"
}
run_ref() {
  # shellcheck disable=SC2086
  HF_HUB_OFFLINE=1 "$py" scripts/minilm/bench_reference.py --iters "$iters" --device "$device" \
    --batch $batches --dtype $dtypes $ref_threads > "$out/ref.$1.json"
}
i=0
while [ "$i" -lt "$rounds" ]; do
  if [ $((i % 2)) -eq 0 ]; then run_gpuport "$i" && run_ref "$i"; else run_ref "$i" && run_gpuport "$i"; fi
  i=$((i + 1))
done
cat "$out"/gpuport.*.json "$out"/ref.*.json
"$py" - "$out" "$rounds" <<'PY'
import json, sys
def best(kind):
    """Each (dtype, batch)'s best round, and every round's sentences/s."""
    docs = [json.load(open(f"{sys.argv[1]}/{kind}.{i}.json")) for i in range(int(sys.argv[2]))]
    top, seen = {}, {}
    for d in docs:
        for x in d["results"]:
            k = (x["dtype"], x["batch"])
            seen.setdefault(k, []).append(x["sentences_per_s"])
            if k not in top or x["sentences_per_s"] > top[k]["sentences_per_s"]:
                top[k] = x
    return docs[0], top, seen
g, gbest, gseen = best("gpuport")
r, ref, rseen = best("ref")
print(f"\n{sys.argv[2]} rounds, each side's best (every round's sentences/s in brackets)")
print(f"\n| dtype | batch x tokens | gpuport ({g['backend']}) sentences/s | tokens/s "
      f"| {r['library']} ({r['device']}, {r['threads']} threads) sentences/s | tokens/s | ratio |")
print("|---|---|---|---|---|---|---|")
for k, x in gbest.items():
    y = ref.get(k)
    if y:
        gs = " ".join(f"{v:.2f}" for v in gseen[k])
        rs = " ".join(f"{v:.2f}" for v in rseen[k])
        print(f"| {x['dtype']} | {x['batch']} x {x['seqlen']} | {x['sentences_per_s']:.2f} ({gs}) | "
              f"{x['tokens_per_s']:.0f} | {y['sentences_per_s']:.2f} ({rs}) | {y['tokens_per_s']:.0f} | "
              f"{x['tokens_per_s'] / y['tokens_per_s']:.2f} |")
PY
