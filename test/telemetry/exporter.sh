#!/bin/sh
# exporter.sh TOOL - checks `gpuport monitor` end to end on the cpu backend:
#   - `TOOL monitor -c 3` prints a header and three rows; `--json -c 2` prints JSON lines
#     that Python's json module parses, with real memory and utilisation values;
#   - `TOOL monitor --prometheus --listen 127.0.0.1:0` serves /metrics on an ephemeral
#     loopback port; a real client (curl) scrapes it and `promtool check metrics`
#     (Prometheus's own parser and linter) accepts the scrape, for the real host and for
#     a fake host tree (GP_TELEMETRY_HOST_ROOT) that has every host field: temperatures,
#     the energy counter and power, limits, clocks, ECC counters;
#   - the content type is the text format's (version=0.0.4), other paths answer 404 and
#     other methods 405.
# Exits 77 (skipped) when curl, promtool or python3 is missing, or the tool was built
# without libmicrohttpd, unless GP_REQUIRE_EXPORTER_TEST=1 (CI), which makes that a
# failure.
tool=$1
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
  echo "usage: $0 TOOL" >&2
  exit 2
fi

skip() {
  echo "exporter.sh: $1"
  if [ "${GP_REQUIRE_EXPORTER_TEST:-0}" = 1 ]; then echo "exporter.sh: FAILED (required)"; exit 1; fi
  echo "exporter.sh: skipped"
  exit 77
}
for cmd in curl promtool python3; do
  command -v "$cmd" >/dev/null 2>&1 || skip "$cmd not found (Debian: curl, prometheus, python3)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp_exporter.XXXXXX") || exit 1
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() {
  echo "exporter.sh: FAILED: $1"
  exit 1
}

echo "== gpuport monitor -c 3"
"$tool" monitor -c 3 -i 0.3 > "$tmp/table" || fail "monitor -c 3 exited $?"
cat "$tmp/table"
[ "$(grep -c '^  *0 host ' "$tmp/table")" -eq 3 ] || fail "monitor -c 3 did not print three rows"

echo "== gpuport monitor --json -c 2"
"$tool" monitor --json -c 2 -i 0.3 > "$tmp/json" || fail "monitor --json exited $?"
python3 - "$tmp/json" <<'EOF' || fail "monitor --json output"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
for r in rows:
    assert r["source"] == "host" and r["vendor"] == "cpu", r
    assert r["memory_total_bytes"] > 0 and 0 <= r["memory_used_bytes"] <= r["memory_total_bytes"], r
    u = r["util_compute_pct"]
    assert u is None or 0 <= u <= 100, r
    for k, v in r.items():
        assert v is None or isinstance(v, (int, float, str, list)), (k, v)
print("json: %d rows, fields reported: %s" % (len(rows), sorted(k for k, v in rows[-1].items() if v is not None)))
EOF

# scrape NAME [ENV...]: starts the exporter, scrapes twice, checks with promtool.
scrape() {
  name=$1
  shift
  env "$@" "$tool" monitor --prometheus --listen 127.0.0.1:0 > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  url=
  for i in $(seq 1 100); do
    url=$(sed -n 's/^listening on //p' "$tmp/out")
    [ -n "$url" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      if grep -q "without libmicrohttpd" "$tmp/err"; then skip "the tool was built without libmicrohttpd"; fi
      cat "$tmp/err"
      fail "the exporter exited"
    fi
    sleep 0.1
  done
  [ -n "$url" ] || fail "the exporter did not say where it listens"
  case "$url" in http://127.0.0.1:*/metrics) ;; *) fail "listening on $url, not loopback" ;; esac
  curl -sf "$url" > /dev/null || fail "first scrape of $url"
  sleep 0.3
  curl -sf -D "$tmp/headers" "$url" > "$tmp/$name.prom" || fail "scrape of $url"
  grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/headers" || fail "content type: $(cat "$tmp/headers")"
  code=$(curl -s -o /dev/null -w '%{http_code}' "${url%/metrics}/other")
  [ "$code" = 404 ] || fail "GET /other answered $code"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url")
  [ "$code" = 405 ] || fail "POST /metrics answered $code"
  kill "$pid"
  wait "$pid" 2>/dev/null
  pid=
  echo "== promtool check metrics ($name: $(grep -vc '^#' "$tmp/$name.prom") samples)"
  promtool check metrics < "$tmp/$name.prom" || { cat "$tmp/$name.prom"; fail "promtool rejected the $name scrape"; }
}

need() { # need NAME PATTERN...: each pattern is a line of the NAME scrape
  f=$1
  shift
  for p in "$@"; do
    grep -Eq "$p" "$tmp/$f.prom" || { cat "$tmp/$f.prom"; fail "$f scrape has no line matching '$p'"; }
  done
}

scrape host
need host '^gpuport_telemetry_up\{device="0",vendor="cpu",source="host"\} 1$' \
  '^gpuport_memory_total_bytes\{device="0",vendor="cpu"\} [0-9]' '^# TYPE gpuport_memory_used_bytes gauge$'

# A fake host with every field the cpu backend reads (two packages, DIMM sensors, RAPL,
# cpufreq, EDAC), two virtual devices.
root="$tmp/root"
w() { mkdir -p "$(dirname "$root$1")" && printf '%s\n' "$2" > "$root$1"; }
w /sys/class/hwmon/hwmon0/name coretemp
w /sys/class/hwmon/hwmon0/temp1_label "Package id 0"
w /sys/class/hwmon/hwmon0/temp1_input 47000
w /sys/class/hwmon/hwmon1/name jc42
w /sys/class/hwmon/hwmon1/temp1_input 36500
w /sys/class/powercap/intel-rapl:0/name package-0
w /sys/class/powercap/intel-rapl:0/energy_uj 123456789
w /sys/class/powercap/intel-rapl:0/max_energy_range_uj 262143328850
w /sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw 125000000
w /sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq 2400000
w /sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq 3500000
w /sys/devices/system/edac/mc/mc0/ce_count 2
w /sys/devices/system/edac/mc/mc0/ue_count 0
cp /proc/meminfo "$root/proc/meminfo" 2>/dev/null || { mkdir -p "$root/proc"; cp /proc/meminfo "$root/proc/meminfo"; }
cp /proc/stat "$root/proc/stat"
scrape fake GP_TELEMETRY_HOST_ROOT="$root" GP_CPU_DEVICES=2
need fake '^gpuport_temperature_celsius\{device="1",vendor="cpu",sensor="die"\} 47$' \
  '^gpuport_temperature_celsius\{device="0",vendor="cpu",sensor="memory"\} 36.5$' \
  '^# TYPE gpuport_energy_joules_total counter$' \
  '^gpuport_energy_joules_total\{device="0",vendor="cpu"\} 123.456789' \
  '^gpuport_power_limit_watts\{device="0",vendor="cpu"\} 125$' \
  '^gpuport_power_watts\{device="0",vendor="cpu"\} 0$' \
  '^gpuport_clock_max_hertz\{device="0",vendor="cpu",clock="sm"\} 3500000000$' \
  '^gpuport_clock_hertz\{device="1",vendor="cpu",clock="sm"\} 2400000000$' \
  '^gpuport_ecc_errors_total\{device="0",vendor="cpu",type="corrected"\} 2$' \
  '^# TYPE gpuport_ecc_errors_total counter$'
# The Grafana dashboard: every query parses (promtool checks it as a recording rule) and
# names only metrics the exporter has.
dash="$(dirname "$0")/../../docs/grafana/gpuport-telemetry.json"
python3 - "$dash" "$tmp/rules.yml" "$tmp/names" <<'EOF' || fail "the dashboard's queries"
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
with open(sys.argv[2], "w") as f:
    f.write("groups:\n- name: dashboard\n  rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m")
        e = re.sub(r"\$[a-z_]+", ".*", e)
        f.write("  - record: gpuport:dashboard_%d\n    expr: %s\n" % (i, json.dumps(e)))
names = sorted(set(n for e in exprs for n in re.findall(r"\bgpuport_[a-z_]+", e)))
open(sys.argv[3], "w").write("\n".join(names) + "\n")
print("dashboard: %d queries over %s" % (len(exprs), " ".join(names)))
EOF
promtool check rules "$tmp/rules.yml" > /dev/null || { cat "$tmp/rules.yml"; fail "promtool rejected a dashboard query"; }
while read -r name; do
  grep -qw "$name" "$(dirname "$0")/../../cli/monitor.c" || fail "the dashboard names $name, which the exporter does not have"
done < "$tmp/names"
echo "exporter.sh: passed"
