#!/usr/bin/env bash
# A run's fixed cost (issue 27, point 4; docs/benchmarks.md, "A run's
# fixed cost"): the machine time a campaign spends per run besides the
# measured window — the gate, spawn, load, setup, warmup, exit and the
# store's write. Measured from outside, as the difference of two campaigns
# of examples/precision.toml's get100 (SMALL and LARGE blocks) divided by
# their difference in runs, so the campaign's own start (sealing, hashing
# the binary, the gate's baseline) drops out. With several binaries the
# rounds alternate them, so each sees the same machine.
#
#   mk/bench-fixed.sh ROUNDS BLOCKLAB [BLOCKLAB...]
#
# BLOCKLAB_FIXED_BUSY=1 keeps one core busy meanwhile (the precision
# benchmark's neighbour).
set -euo pipefail
rounds=${1:?usage: mk/bench-fixed.sh ROUNDS BLOCKLAB [BLOCKLAB...]}
shift
[ $# -gt 0 ] || { echo "usage: mk/bench-fixed.sh ROUNDS BLOCKLAB [BLOCKLAB...]" >&2; exit 2; }
small=${BLOCKLAB_FIXED_SMALL:-20}
large=${BLOCKLAB_FIXED_LARGE:-120}
plan=$(dirname "$0")/../examples/precision.toml
data=$(mktemp -d "${TMPDIR:-/tmp}/blocklab-fixed.XXXXXX")
trap 'rm -rf "$data"' EXIT
if [ "${BLOCKLAB_FIXED_BUSY:-0}" = 1 ]; then
    sh -c 'while :; do :; done' &
    busy=$!
    trap 'kill $busy 2>/dev/null || true; rm -rf "$data"' EXIT
fi

# Seconds of wall time for one campaign of BLOCKS blocks of get100 by BIN;
# the measured windows' median (ms) goes to $data/window.
campaign() {
    local bin=$1 blocks=$2 start end
    rm -rf "$data/store"
    start=$(date +%s.%N)
    "$bin" campaign "$plan" --data "$data/store" --progress none --set "blocks=$blocks" \
        --set 'workloads=[{ name = "get100" }]' >/dev/null 2>&1
    end=$(date +%s.%N)
    "$bin" report latest --data "$data/store" --format json | python3 -c '
import json, statistics, sys
runs = json.load(sys.stdin)["runs"]
print(statistics.median(1000 * r["measured_s"] for r in runs if r["status"] == "ok"))' >"$data/window"
    python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$start" "$end"
}

echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)${busy:+, one core kept busy}"
echo "# blocks $small and $large of get100, 2 arms: $(( 2 * (large - small) )) runs apart"
for round in $(seq "$rounds"); do
    for bin in "$@"; do
        t_small=$(campaign "$bin" "$small")
        t_large=$(campaign "$bin" "$large")
        window=$(cat "$data/window")
        python3 -c '
import sys
bin, ts, tl, runs, window, load = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
per_run = 1000 * (tl - ts) / runs
print(f"round {sys.argv[7]}  {bin}: {per_run:.2f} ms of machine time per run, measured window {window:.2f} ms, fixed cost {per_run - window:.2f} ms (load {load})")
' "$bin" "$t_small" "$t_large" $(( 2 * (large - small) )) "$window" "$(cut -d' ' -f1 /proc/loadavg)" "$round"
    done
done
