#!/bin/sh
# gpu-check.sh - tests scripts/gpu-check.sh without a GPU: a bundle of the cpu backend
# (its emulation modes stand in for the hardware) is prepared and run with --small, and
# the output folder must hold at most 4 files: summary.json (valid JSON, every step in
# order, each passed or skipped with its reason, the limits under 8 minutes, the kernels
# named for every emulation mode, every lane probe passed, the paged attention benchmark's
# decode and prefill rows with the kernels they ran), summary.md and the raw archive. Then a failing step (an injected probe failure) and a step over its limit
# (GPU_CHECK_LIMITS) are recorded while the run goes on, and the exit status says so.
#
# Usage: sh test/gpu-check.sh [WORKDIR] (default build/gpu-check-test); run from the
# source tree with the cpu backend built (make BACKEND=cpu).
set -u
cd "$(dirname "$0")/.." || exit 2
work=${1:-build/gpu-check-test}
rm -rf "$work"
mkdir -p "$work" || exit 2
status=0
fail() {
  echo "gpu-check test: FAIL: $*"
  status=1
}

scripts/gpu-check.sh prepare "$work/bundle" --backend cpu || { echo "gpu-check test: prepare failed"; exit 1; }

# 1. The whole run, small shapes.
scripts/gpu-check.sh run "$work/bundle" "$work/out" --small
rc=$?
[ $rc -eq 0 ] || fail "run exited $rc"
n=$(find "$work/out" -type f | wc -l)
[ "$n" -le 4 ] || fail "$n files written, at most 4 allowed"
for f in summary.json summary.md gpu-check-raw.tar.gz; do
  [ -s "$work/out/$f" ] || fail "no $f"
done
python3 - "$work/out/summary.json" <<'PY' || fail "summary.json"
import json, sys
d = json.load(open(sys.argv[1]))
want = ["info", "hardware", "kernels", "kernels-sm90a", "memcheck", "racecheck", "bench-gemm",
        "bench-attention", "bench-paged", "bench-launch", "bench-embed"]
names = [s["name"] for s in d["steps"]]
assert names == want, "steps %s" % names
assert d["result"] == "pass", d["failed_steps"]
assert d["limits_s"] < 480, "limits add up to %d s" % d["limits_s"]
for s in d["steps"]:
    assert s["status"] in ("pass", "skip"), (s["name"], s["status"], s["reason"])
    assert s["status"] != "skip" or s["reason"], "%s skipped without a reason" % s["name"]
    assert isinstance(s["seconds"], float) and s["limit_s"] > 0, s
steps = {s["name"]: s for s in d["steps"]}
for gpu_only in ("memcheck", "racecheck", "kernels-sm90a"):
    assert steps[gpu_only]["status"] == "skip", gpu_only
hw = steps["hardware"]["figures"]
assert hw["passed"] == hw["probes"] and hw["probes"] >= 50, hw
k = steps["kernels"]["figures"]
assert sorted(k["modes"]) == ["host", "mfma", "portable", "sm80", "sm90a"], k["modes"]
for mode, ran in k["kernels_by_mode"].items():
    assert ran, "mode %s names no kernel" % mode
assert any("_sm90a_" in n for n in k["kernels_by_mode"]["sm90a"]), k["kernels_by_mode"]["sm90a"]
assert any("_sm80_" in n for n in k["kernels_by_mode"]["sm80"])
assert any("mfma" in n for n in k["kernels_by_mode"]["mfma"])
# the paged kernels are checked against float64 in every family's mode
for mode, frag in (("sm80", "_sm80_"), ("sm90a", "_sm80_"), ("mfma", "_mfma_"), ("portable", "_portable")):
    assert any(n.startswith("kvcache:") and frag in n for n in k["kernels_by_mode"][mode]), (mode, k["kernels_by_mode"][mode])
assert steps["bench-gemm"]["kernels"] and steps["bench-attention"]["kernels"], "bench kernels"
assert "pytorch" in steps["bench-attention"]["figures"] or steps["bench-attention"]["figures"]["rows"]
pg = steps["bench-paged"]
assert pg["status"] == "pass" and pg["limit_s"] > 0, pg
assert len(pg["figures"]["rows"]) == 8, "bench-paged: %d rows" % len(pg["figures"]["rows"])
assert {r["mode"] for r in pg["figures"]["rows"]} == {"decode", "prefill"}, pg["figures"]["rows"]
assert any(k.startswith("kvcache:") for k in pg["kernels"]), pg["kernels"]
assert any(k.startswith("fwd:") for k in pg["kernels"]), pg["kernels"]
print("gpu-check test: summary.json: %d steps, limits %d s, %d probes, %d kernel checks" %
      (len(names), d["limits_s"], hw["probes"], k["checks"]))
PY
tar tzf "$work/out/gpu-check-raw.tar.gz" | grep -q 'kernels.jsonl' || fail "the raw archive lacks kernels.jsonl"

# 2. A failing step and a step over its limit are recorded, the run goes on, exit 1.
GP_SELFTEST_INJECT=sm80.ldmatrix_x4 \
  scripts/gpu-check.sh run "$work/bundle" "$work/out2" --small --only info,hardware,bench-gemm > "$work/run2.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "a run with a failing step exited $rc, expected 1"
GPU_CHECK_LIMITS="kernels=1" \
  scripts/gpu-check.sh run "$work/bundle" "$work/out3" --small --only kernels,bench-gemm > "$work/run3.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "a run with a step over its limit exited $rc, expected 1"
for o in out2 out3; do
  n=$(find "$work/$o" -type f | wc -l)
  [ "$n" -le 4 ] || fail "$n files written by the $o run"
done
python3 - "$work/out2/summary.json" "$work/out3/summary.json" <<'PY' || fail "the failing runs' summary.json"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["steps"]}
assert list(st) == ["info", "hardware", "bench-gemm"], list(st)
assert d["result"] == "fail" and d["failed_steps"] == ["hardware"], d["failed_steps"]
assert st["hardware"]["figures"]["failed"] == 1, st["hardware"]
assert st["hardware"]["figures"]["failures"][0]["probe"] == "sm80.ldmatrix_x4"
assert st["bench-gemm"]["status"] == "pass", "the run did not go on after the failure"
d = json.load(open(sys.argv[2]))
st = {s["name"]: s for s in d["steps"]}
assert st["kernels"]["status"] == "timeout" and "limit" in st["kernels"]["reason"], st["kernels"]
assert st["bench-gemm"]["status"] == "pass", "the run did not go on after the timeout"
print("gpu-check test: a failing and a timed-out step recorded, the run went on")
PY
grep -q 'FAIL sm80.ldmatrix_x4' "$work/out2/summary.md" || fail "summary.md does not name the failing probe"

# 3. Bad arguments.
scripts/gpu-check.sh run "$work/bundle" "$work/out4" --only nosuchstep > /dev/null 2>&1
[ $? -eq 2 ] || fail "--only with an unknown step did not exit 2"
scripts/gpu-check.sh run "$work" "$work/out4" > /dev/null 2>&1
[ $? -eq 2 ] || fail "a folder that is no bundle did not exit 2"

if [ $status -eq 0 ]; then echo "gpu-check test: pass"; fi
exit $status
