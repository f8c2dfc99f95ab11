#!/usr/bin/env bash
# The precision benchmark (docs/benchmarks.md, "Precision per
# machine-minute"): A/A campaigns of examples/precision.toml while another
# process keeps one core busy, then campaigns with arm `b` slowed by 2% of
# the baseline's latency, counting the intervals that exclude 1.
#
#   mk/bench-precision.sh BLOCKLAB [CAMPAIGNS] [DETECTIONS] [SETS...]
#
# CAMPAIGNS A/A campaigns (default 20) go through `blocklab calibrate`,
# which prints coverage, noise floor, the variance levels and the planner's
# designs; DETECTIONS slowed campaigns per workload (default 10). Extra
# arguments are `--set` overrides applied to every campaign. Everything is
# stored in a fresh data directory under ${TMPDIR:-/tmp}.
set -euo pipefail
blocklab=${1:?usage: mk/bench-precision.sh BLOCKLAB [CAMPAIGNS] [DETECTIONS] [SETS...]}
campaigns=${2:-20}
detections=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
sets=()
for s in "$@"; do sets+=(--set "$s"); done
# BLOCKLAB_PRECISION_PLAN=FILE benchmarks another design of the same A/A
# plan (e.g. examples/precision-duet.toml).
plan=${BLOCKLAB_PRECISION_PLAN:-examples/precision.toml}
# BLOCKLAB_PRECISION_DATA=DIR with CAMPAIGNS=0 reuses the A/A campaigns of
# an earlier run there and runs the detections only.
data=${BLOCKLAB_PRECISION_DATA:-$(mktemp -d "${TMPDIR:-/tmp}/blocklab-precision.XXXXXX")}

# The neighbour: one core kept busy for the whole benchmark.
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT

echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), one core kept busy (pid $busy)"
echo "# data: $data"
start=$(date +%s)
if [ "$campaigns" -gt 0 ]; then
    "$blocklab" calibrate "$plan" --campaigns "$campaigns" --data "$data" --progress none "${sets[@]}"
    echo "# A/A: $(( $(date +%s) - start )) s for $campaigns campaigns"
fi

# Detection: per workload, b slowed by 2% of the baseline's batch median
# latency as the A/A campaigns measured it.
for workload in get100 ryw; do
    ns=$("$blocklab" report 1 --data "$data" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
w = sys.argv[1]
vals = sorted(x["values"]["batch_median_latency"] for x in r["runs"]
              if x["workload"] == w and x["status"] == "ok")
print(max(1, round(0.02 * 1000 * vals[len(vals) // 2])))' "$workload")
    hit=0
    for i in $(seq 1 "$detections"); do
        "$blocklab" campaign "$plan" --data "$data" --progress none "${sets[@]}" \
            --set "seed=$(( 90000 + i ))" \
            --set "workloads=[{ name = \"$workload\" }]" \
            --set "arms=[{ name = \"a\", baseline = true }, { name = \"b\", inject_busy_ns = $ns }]" \
            >/dev/null
        "$blocklab" report latest --data "$data" --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
for e in r["effects"]:
    if e["statistic"] in ("batch_median_latency", "net_mean_latency", "cpu_measured", "mean_latency"):
        excl = "excludes 1" if e["ci_low"] > 1 or e["ci_high"] < 1 else "contains 1"
        print("#   {} {}: {:.4f} [{:.4f}, {:.4f}] {}".format(
            e["workload"], e["statistic"], e["ratio"], e["ci_low"], e["ci_high"], excl))'
    done
    echo "# detection on $workload: b slowed by $ns ns per transaction (2% of the A/A batch median), $detections campaigns above"
done
echo "# total: $(( $(date +%s) - start )) s"
