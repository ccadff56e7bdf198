#!/bin/sh
# check-deps.sh [HEADER...] - the build rebuilds what a header change touches, and
# nothing else. For each header (default: one kernel family header, the dialect header,
# the harness header, the tool's header), `make -n -W HEADER` (make's "what if it were
# modified") lists the compile commands a change would run; they must be exactly the
# objects whose dependency files (-MMD, build/cpu/**/*.d) name the header, and every
# program compiled from source in one command (test suites, examples) must name it too
# or depend on an object or archive that is rebuilt. Prints one line per header:
#   kernels/sm80/sm80.h: 6 of 83 objects include it, 6 rebuilt; 0 of 29 programs compiled
# Needs a built cpu tree (make BACKEND=cpu); run from the repository root.
set -u
make=${MAKE:-make}
if [ ! -d build/cpu ]; then
  echo "check-deps: build/cpu is missing: run make BACKEND=cpu first" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  set -- kernels/sm80/sm80.h include/gpuport/kernel.h test/check_util.h cli/tool.h
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Fresh tree first: otherwise the commands of what is already stale blur the picture.
if ! $make -q BACKEND=cpu backend-cpu >/dev/null 2>&1; then
  echo "check-deps: the cpu tree is not up to date: run make BACKEND=cpu first" >&2
  exit 2
fi

# "target: prerequisites" of every dependency file, one target per line with its
# prerequisites joined (the files wrap lines with backslashes).
find build/cpu -name '*.d' | sort | while read -r d; do
  sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' "$d" | awk -F': *' 'NF >= 2 && $2 != "" { print $1 "\t" $2 }'
done > "$tmp/deps"
nobj=$(awk -F'\t' '$1 ~ /\.o$/' "$tmp/deps" | wc -l)
nprog=$(awk -F'\t' '$1 !~ /\.o$/' "$tmp/deps" | wc -l)

status=0
for h in "$@"; do
  if [ ! -f "$h" ]; then
    echo "check-deps: no header $h" >&2
    status=1
    continue
  fi
  # Objects (and programs) whose dependency file names h.
  awk -F'\t' -v h="$h" '{ n = split($2, p, " "); for (i = 1; i <= n; i++) if (p[i] == h) { print $1; break } }' \
    "$tmp/deps" | sort -u > "$tmp/includers"
  grep '\.o$' "$tmp/includers" > "$tmp/want" || true
  $make -n -W "$h" BACKEND=cpu backend-cpu > "$tmp/plan" 2>&1
  # Compile commands: " -c SRC -o OBJ"; programs compiled and linked from one source:
  # a -MF NAME.d without -c.
  grep -E ' -c ' "$tmp/plan" | sed -n 's/.* -o \([^ ]*\).*/\1/p' | sort -u > "$tmp/rebuilt"
  grep -E ' -MF ' "$tmp/plan" | grep -vE ' -c ' | sed -n 's/.* -o \([^ ]*\).*/\1/p' | sort -u > "$tmp/progs"
  extra=$(comm -13 "$tmp/want" "$tmp/rebuilt")
  missing=$(comm -23 "$tmp/want" "$tmp/rebuilt")
  w=$(wc -l < "$tmp/want")
  r=$(wc -l < "$tmp/rebuilt")
  p=$(wc -l < "$tmp/progs")
  echo "$h: $w of $nobj objects include it, $r rebuilt; $p of $nprog programs compiled"
  if [ -n "$extra" ]; then
    echo "  rebuilt though they do not include it:"; echo "$extra" | sed 's/^/    /'
    status=1
  fi
  if [ -n "$missing" ]; then
    echo "  include it but are not rebuilt:"; echo "$missing" | sed 's/^/    /'
    status=1
  fi
  # A program compiled from source must name h itself, or have a rebuilt object or a
  # library among its prerequisites (then it relinks, and its one command recompiles).
  if [ "$r" -eq 0 ]; then
    stray=$(comm -13 "$tmp/includers" "$tmp/progs")
    if [ -n "$stray" ]; then
      echo "  programs compiled though nothing they use changed:"; echo "$stray" | sed 's/^/    /'
      status=1
    fi
  fi
done
exit $status
