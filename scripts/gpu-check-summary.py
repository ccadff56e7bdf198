#!/usr/bin/env python3
"""gpu-check-summary.py RAW OUTDIR BUDGET - summary.json and summary.md of a gpu-check run.

Reads what `scripts/gpu-check.sh run` left in RAW: steps.tsv (one line per step: name,
status, seconds, limit, exit status, reason), environment.txt (key=value) and each
step's raw output (gpuport's JSON or JSON Lines, compute-sanitizer's text, the attention
sweep's JSON), and writes OUTDIR/summary.json (every step with its status, seconds,
limit, key figures and the kernels that ran) and OUTDIR/summary.md (the same as tables).
A step that exited 0 but left output that does not parse is marked failed: the output is
the check. Standard library only.
"""
import json
import os
import re
import sys


def read_jsonl(path):
    """The objects of a JSON Lines file; ValueError names the first bad line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ValueError("%s line %d: %s" % (os.path.basename(path), n, e))
    return out


def read_json(path):
    with open(path) as f:
        return json.load(f)


def kernels_of(lines):
    """Distinct kernel names ("op:name") the checks of a selftest report, in order."""
    seen = []
    for o in lines:
        for k in (o.get("kernels") or "").split(", "):
            if k and k != "?" and k not in seen:
                seen.append(k)
    return seen


def fig_hardware(raw):
    lines = read_jsonl(os.path.join(raw, "hardware.jsonl"))
    probes = [o for o in lines if "probe" in o]
    if not probes:
        raise ValueError("hardware.jsonl holds no probe line")
    fails = [{"probe": o["probe"], "detail": o["detail"]} for o in probes if o["status"] == "fail"]
    head = next((o for o in lines if o.get("selftest") == "hardware"), {})
    fig = {"probes": len(probes), "passed": sum(o["status"] == "pass" for o in probes),
           "failed": len(fails), "skipped": sum(o["status"] == "skip" for o in probes),
           "failures": fails[:10], "device": head.get("device"), "arch": head.get("arch"),
           "seed": head.get("seed")}
    skips = sorted({o["detail"] for o in probes if o["status"] == "skip"})
    if skips:
        fig["skip_reasons"] = skips
    return fig, ["probe:" + o["probe"] for o in probes if o["status"] != "skip"]


def fig_kernels(raw, name):
    lines = read_jsonl(os.path.join(raw, name + ".jsonl"))
    checks = [o for o in lines if "check" in o]
    if not checks:
        raise ValueError("%s.jsonl holds no check line" % name)
    head = next((o for o in lines if o.get("selftest") == "kernels"), {})
    modes = {}
    for o in checks:
        m = modes.setdefault(o["mode"], {"passed": 0, "failed": 0})
        m["passed" if o["status"] == "pass" else "failed"] += 1
    for o in lines:  # a mode whose process died leaves no footer: count what it printed
        if "modes_failed" in o:
            modes_summary = o.get("summary")
            break
    else:
        modes_summary = None
    fails = [{"check": o["check"], "mode": o["mode"], "kernels": o.get("kernels"),
              "summary": o.get("summary")} for o in checks if o["status"] == "fail"]
    per_mode = {m: kernels_of([o for o in checks if o["mode"] == m]) for m in modes}
    fig = {"checks": len(checks), "passed": sum(o["status"] == "pass" for o in checks),
           "failed": len(fails), "modes": modes, "modes_summary": modes_summary,
           "failures": fails[:10], "seed": head.get("seed"), "kernels_by_mode": per_mode}
    return fig, kernels_of(checks)


def fig_sanitizer(raw, name):
    with open(os.path.join(raw, name + ".txt"), errors="replace") as f:
        text = f.read()
    sums = [int(x) for x in re.findall(r"ERROR SUMMARY: (\d+) error", text)]
    hazards = [int(x) for x in re.findall(r"RACECHECK SUMMARY: (\d+) hazard", text)]
    if not sums:
        raise ValueError("no ERROR SUMMARY line in %s.txt" % name)
    first = [l.strip() for l in text.splitlines() if l.startswith("========= ") and
             ("Invalid" in l or "Race" in l or "hazard" in l.lower() or "Error" in l)][:5]
    fig = {"processes": len(sums), "errors": sum(sums), "first_reports": first}
    if hazards:
        fig["hazards"] = sum(hazards)
    return fig, []


def fig_bench(raw, files):
    fig, kernels = {}, []
    for label, fname in files:
        path = os.path.join(raw, fname)
        if not os.path.exists(path):
            continue
        rows = []
        for r in read_json(path)["results"]:
            row = {k: r[k] for k in ("name", "shape", "dtype", "median_ms", "tflops", "anchor",
                                     "anchor_tflops", "ratio", "anchor_note", "kernels") if k in r}
            for k, v in r.items():  # the unit of each figure is its key (GB/s, us, ...)
                if k not in row and k not in ("bench",) and isinstance(v, (int, float)):
                    row[k] = v
            rows.append(row)
            for k in (r.get("kernels") or "").split(", "):
                if k and k != "?" and k not in kernels:
                    kernels.append(k)
        fig[label] = rows
    if not fig:
        raise ValueError("no benchmark output")
    return fig, kernels


def fig_attention(raw):
    rows = read_json(os.path.join(raw, "attention-anchor.json"))
    keep = ("head_dim", "seqlen", "batch", "causal", "pass", "gpuport_tflops", "gpuport_sm90a_tflops",
            "torch_flash_tflops", "ratio", "sm90a_ratio", "gpuport_error", "torch_error")
    kernels = []
    for r in rows:
        for key in ("gpuport_kernels", "gpuport_sm90a_kernels"):
            for k in (r.get(key) or "").split(", "):
                if k and k != "?" and k not in kernels:
                    kernels.append(k)
    fig = {"rows": [{k: r.get(k) for k in keep if r.get(k) is not None} for r in rows]}
    why = sorted({r["torch_error"] for r in rows if r.get("torch_error")})
    if why:
        fig["pytorch"] = "skipped: " + "; ".join(why)
    return fig, kernels


def fig_paged(raw):
    """bench attention --paged: every row, the goal's point (decode, batch 32, context
    8k: K/V read at >= 70% of the memory bandwidth, within 10% of dense attention on the
    same K/V) and paged / dense over all rows."""
    d = read_json(os.path.join(raw, "bench-paged.json"))
    keep = ("mode", "shape", "dtype", "batch", "context", "seqlen_q", "page_size", "splits", "median_ms", "tokens_per_s",
            "kv_gbps", "mem_bw_gbps", "mem_bw", "bw_fraction", "dense_ms", "dense_kv_gbps", "paged_over_dense",
            "max_abs_diff", "kernels", "dense_kernels")
    rows = [{k: r[k] for k in keep if k in r} for r in d["results"]]
    if not rows:
        raise ValueError("bench-paged.json holds no result")
    # PyTorch's SDPA on dense K/V of the same shapes (scripts/paged-anchor.py), when it ran
    anchor = read_json(os.path.join(raw, "paged-anchor.json")) if os.path.exists(
        os.path.join(raw, "paged-anchor.json")) else {"error": "not run"}
    sdpa = {(a["batch"], a["context"], a["seqlen_q"]): a["sdpa_ms"] for a in anchor.get("rows", [])}
    for r in rows:
        ms = sdpa.get((r["batch"], r["context"], r["seqlen_q"]))
        if ms:
            r["sdpa_ms"], r["paged_over_sdpa"] = ms, r["median_ms"] / ms
    kernels = []
    for r in rows:
        for key in ("kernels", "dense_kernels"):
            for k in (r.get(key) or "").split(", "):
                if k and k != "?" and k not in kernels:
                    kernels.append(k)
    ratios = sorted(r["paged_over_dense"] for r in rows)
    fig = {"rows": rows, "seed": d.get("seed"), "paged_over_dense_median": ratios[len(ratios) // 2],
           "paged_over_dense_max": ratios[-1], "sdpa": anchor.get("torch") or anchor.get("error")}
    g = next((r for r in rows if r["mode"] == "decode" and r["batch"] == 32 and r["context"] == 8192), None)
    if g:
        fig["goal"] = {"shape": g["shape"], "kv_gbps": g["kv_gbps"], "bw_fraction": g["bw_fraction"],
                       "mem_bw": g["mem_bw"], "mem_bw_gbps": g["mem_bw_gbps"],
                       "paged_over_dense": g["paged_over_dense"],
                       # against the data sheet only (a copy's bandwidth is below the peak)
                       "bandwidth_met": g["bw_fraction"] >= 0.7 if g["mem_bw"] == "--mem-bw" else None,
                       "dense_met": g["paged_over_dense"] <= 1.1}
    return fig, kernels


def figures(raw, name):
    if name == "info":
        d = read_json(os.path.join(raw, "info.json"))
        devs = d.get("devices") or []
        dev = devs[0] if devs else {}
        fig = {"backend": d.get("backend"), "version": d.get("gpuport_version"), "devices": d.get("device_count"),
               "device": dev.get("name"), "arch": dev.get("arch"),
               "compute_capability": dev.get("compute_capability"),
               "multiprocessors": dev.get("multiprocessor_count"), "memory_bytes": dev.get("total_memory")}
        sass = os.path.join(raw, "sass.json")
        if os.path.exists(sass) and os.path.getsize(sass):
            fig["sass"] = read_json(sass)
        return fig, []
    if name == "hardware":
        return fig_hardware(raw)
    if name in ("kernels", "kernels-sm90a"):
        return fig_kernels(raw, name)
    if name in ("memcheck", "racecheck"):
        return fig_sanitizer(raw, name)
    if name == "bench-gemm":
        return fig_bench(raw, [("gate_off", "bench-gemm.json"), ("gate_on", "bench-gemm-sm90a.json")])
    if name == "bench-attention":
        return fig_attention(raw)
    if name == "bench-paged":
        return fig_paged(raw)
    if name == "bench-launch":
        return fig_bench(raw, [("results", "bench-launch.json")])
    if name == "bench-embed":
        return fig_bench(raw, [("results", "bench-embed.json")])
    return {}, []


def key_figures(s):
    """One short line of the step's figures for the table."""
    f, n = s.get("figures") or {}, s["name"]
    if "error" in f:
        return "output: " + f["error"]
    if n == "info" and f and not f.get("devices"):
        return "no %s device answered" % f.get("backend")
    if n == "info" and f:
        txt = "%s (%s, cc %s, %s SMs)" % (f.get("device"), f.get("arch"), f.get("compute_capability"),
                                         f.get("multiprocessors"))
        if f.get("sass"):
            x = f["sass"]
            txt += "; SASS: HGMMA in %d kernels, HMMA in %d, UTMALDG %d" % (x["HGMMA_kernels"], x["HMMA_kernels"],
                                                                         x["UTMALDG"])
        return txt
    if n == "hardware" and f:
        return "%d probes: %d pass, %d fail, %d skip" % (f["probes"], f["passed"], f["failed"], f["skipped"])
    if n.startswith("kernels") and f:
        return "%d checks: %d pass, %d fail; %s" % (f["checks"], f["passed"], f["failed"],
                                                 f.get("modes_summary") or ", ".join(f["modes"]))
    if n in ("memcheck", "racecheck") and f:
        return "%d errors in %d processes%s" % (f["errors"], f["processes"],
                                               ", %d hazards" % f["hazards"] if "hazards" in f else "")
    if n == "bench-gemm" and f:
        parts = []
        for label in ("gate_off", "gate_on"):
            for r in f.get(label, []):
                parts.append("%s%s %.3g TF/s%s" % ("sm90a " if label == "gate_on" else "", r.get("shape"),
                                                   r.get("tflops", 0), " (%.2fx %s)" % (r["ratio"], r.get("anchor"))
                                                   if "ratio" in r else ""))
        return "; ".join(parts[:4]) + (" ..." if len(parts) > 4 else "")
    if n == "bench-attention" and f:
        rows = f.get("rows", [])
        best = max((r for r in rows if r.get("gpuport_tflops")), key=lambda r: r["gpuport_tflops"], default=None)
        txt = "%d rows" % len(rows)
        if best:
            txt += "; best %.3g TF/s (d%d s%d %s%s)" % (best["gpuport_tflops"], best["head_dim"], best["seqlen"],
                                                     best["pass"], " causal" if best["causal"] else "")
        if "pytorch" in f:
            txt += "; PyTorch " + f["pytorch"]
        return txt
    if n == "bench-paged" and f:
        txt = "%d rows; paged/dense median %.2f, worst %.2f" % (len(f["rows"]), f["paged_over_dense_median"],
                                                               f["paged_over_dense_max"])
        g = f.get("goal")
        if g:
            txt += "; decode b32 ctx8k: %.4g GB/s = %.0f%% of %s %.4g GB/s (goal 70%%), paged/dense %.2f (goal 1.10)" % (
                g["kv_gbps"], 100 * g["bw_fraction"], g["mem_bw"], g["mem_bw_gbps"], g["paged_over_dense"])
        return txt
    if n in ("bench-launch", "bench-embed") and f:
        return "%d results" % len(f.get("results", []))
    return ""


def main():
    if len(sys.argv) != 4:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    raw, out, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
    env = {}
    with open(os.path.join(raw, "environment.txt"), errors="replace") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            if k:
                env[k] = v if k not in env else env[k] + "; " + v
    steps = []
    with open(os.path.join(raw, "steps.tsv")) as f:
        for line in f.read().splitlines()[1:]:
            name, status, secs, limit, rc, reason = (line.split("\t") + [""] * 6)[:6]
            s = {"name": name, "status": status, "seconds": float(secs or 0), "limit_s": int(limit or 0),
                 "rc": int(rc) if rc else None, "reason": reason or None, "figures": {}, "kernels": []}
            if status in ("pass", "fail", "timeout"):
                try:
                    s["figures"], s["kernels"] = figures(raw, name)
                except (OSError, ValueError, KeyError, TypeError) as e:
                    s["figures"] = {"error": str(e)}
                    if status == "pass":
                        s["status"], s["reason"] = "fail", "exit status 0 but its output does not read: %s" % e
            if status == "pass" and name == "kernels-sm90a" and s["figures"].get("modes") and \
                    "sm90a" not in s["figures"]["modes"]:
                s["status"], s["reason"] = "fail", "the gate-on run did not run the sm90a mode"
            steps.append(s)
    total = sum(s["seconds"] for s in steps)
    bad = [s["name"] for s in steps if s["status"] in ("fail", "timeout")]
    info = next((s["figures"] for s in steps if s["name"] == "info" and "error" not in s["figures"]), {})
    summary = {"format": 1, "result": "fail" if bad else "pass", "failed_steps": bad,
               "budget_s": budget, "total_s": round(total, 1),
               "limits_s": sum(s["limit_s"] for s in steps), "device": info, "environment": env,
               "steps": steps}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")

    md = ["# gpu-check: %s" % summary["result"].upper(), "",
          "- device: %s" % (env.get("nvidia_smi") or info.get("device") or "unknown"),
          "- bundle: %s backend, commit %s, built %s" % (env.get("bundle_backend"), env.get("bundle_commit"),
                                                         env.get("bundle_built")),
          "- run: %s (%s), %.0f s of steps (budget %d s)%s" % (env.get("started"), env.get("host"), total, budget,
                                                               ", small shapes" if env.get("small") == "1" else ""),
          ] + (["- %s" % env["bundle_rebuilt"]] if env.get("bundle_rebuilt") else []) + [
          "", "| step | status | seconds / limit | key figures |", "|---|---|---|---|"]
    for s in steps:
        note = key_figures(s)
        if s["reason"]:
            note = s["reason"] + ("; " + note if note else "")
        md.append("| %s | %s | %.1f / %d | %s |" % (s["name"], s["status"], s["seconds"], s["limit_s"],
                                                   note.replace("|", "/")))
    for s in steps:
        f = s["figures"]
        for item in f.get("failures", []) if isinstance(f, dict) else []:
            md.append("- %s FAIL %s: %s" % (s["name"], item.get("probe") or item.get("check"),
                                           item.get("detail") or item.get("summary")))
    gemm = next((s["figures"] for s in steps if s["name"] == "bench-gemm"), {})
    if gemm.get("gate_off") or gemm.get("gate_on"):
        anchor = next((r["anchor"] for r in gemm.get("gate_off", []) if r.get("anchor")), "anchor")
        md += ["", "| GEMM (bf16) | gpuport TFLOP/s | gate on (sm_90a) TFLOP/s | %s TFLOP/s | kernels |" % anchor,
               "|---|---|---|---|---|"]
        on = {r.get("shape"): r for r in gemm.get("gate_on", [])}
        for r in gemm.get("gate_off", []):
            g = on.get(r.get("shape"), {})
            md.append("| %s | %.4g | %s | %s | %s |" % (
                r.get("shape"), r.get("tflops", 0), "%.4g" % g["tflops"] if "tflops" in g else "-",
                "%.4g" % r["anchor_tflops"] if "anchor_tflops" in r else r.get("anchor_note", "-"),
                ", ".join(x for x in (r.get("kernels"), g.get("kernels")) if x)))
    attn = next((s["figures"] for s in steps if s["name"] == "bench-attention"), {})
    if attn.get("rows"):
        md += ["", "| attention | gpuport TFLOP/s | sm_90a TFLOP/s | PyTorch flash TFLOP/s | ratio |",
               "|---|---|---|---|---|"]
        fmt = lambda x: "%.4g" % x if isinstance(x, (int, float)) else "-"
        for r in attn["rows"]:
            md.append("| d%s s%s x%s %s %s | %s | %s | %s | %s |" % (
                r.get("head_dim"), r.get("seqlen"), r.get("batch"), r.get("pass"), "causal" if r.get("causal") else "",
                fmt(r.get("gpuport_tflops")), fmt(r.get("gpuport_sm90a_tflops")), fmt(r.get("torch_flash_tflops")),
                "%.2f" % r["ratio"] if "ratio" in r else "-"))
    paged = next((s["figures"] for s in steps if s["name"] == "bench-paged"), {})
    if paged.get("rows"):
        md += ["", "| paged attention (causal, page %s) | ms | tokens/s | K/V GB/s | of bandwidth | splits | dense ms | "
               "paged/dense | SDPA ms (%s) | paged/SDPA | kernels |" % (paged["rows"][0].get("page_size"), paged.get("sdpa")),
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in paged["rows"]:
            md.append("| %s %s %s | %.4g | %.4g | %.4g | %.0f%% of %s | %s | %.4g | %.2f | %s | %s | %s |" % (
                r["mode"], r["shape"], r.get("dtype", ""), r["median_ms"], r["tokens_per_s"], r["kv_gbps"],
                100 * r["bw_fraction"], r["mem_bw"], r["splits"], r["dense_ms"], r["paged_over_dense"],
                "%.4g" % r["sdpa_ms"] if "sdpa_ms" in r else "-",
                "%.2f" % r["paged_over_sdpa"] if "paged_over_sdpa" in r else "-",
                ", ".join(x for x in (r.get("kernels"), r.get("dense_kernels")) if x)))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
