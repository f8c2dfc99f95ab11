#!/usr/bin/env bash
# Campaign against campaign, A/A (docs/benchmarks.md, "Campaign against
# campaign"): 2 × PAIRS campaigns of one plan, run back to back with one
# binary, compared in pairs (1 with 2, 3 with 4, ...) with `blocklab
# compare`; every row of an A/A pair should show no change, so the share of
# rows with "no detectable change" is the intervals' coverage, to hold
# 95% ± the binomial tolerance.
#
#   mk/bench-compare.sh BLOCKLAB [PAIRS] [PLAN] [COMPARE_BLOCKLAB]
#
# COMPARE_BLOCKLAB (default BLOCKLAB) does the comparing, so the same
# stored campaigns can be judged by two builds' interval methods. With
# BLOCKLAB_COMPARE_DATA=DIR the campaigns stored there are reused and none
# is run.
set -euo pipefail
blocklab=${1:?usage: mk/bench-compare.sh BLOCKLAB [PAIRS] [PLAN] [COMPARE_BLOCKLAB]}
pairs=${2:-40}
plan=${3:-examples/aa-builtin.toml}
judge=${4:-$blocklab}
data=${BLOCKLAB_COMPARE_DATA:-}

echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$data" ]; then
    data=$(mktemp -d "${TMPDIR:-/tmp}/blocklab-compare.XXXXXX")
    start=$(date +%s)
    for i in $(seq 1 $((2 * pairs))); do
        "$blocklab" campaign "$plan" --data "$data" --progress none > /dev/null
        printf '\r# campaign %d of %d' "$i" $((2 * pairs)) >&2
    done
    echo >&2
    echo "# $((2 * pairs)) campaigns of $plan in $(( $(date +%s) - start )) s, load after $(cut -d' ' -f1-3 /proc/loadavg)"
fi
echo "# data: $data; judged by $judge"

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for i in $(seq 1 "$pairs"); do
    "$judge" compare $((2 * i - 1)) $((2 * i)) --data "$data" --format json \
        | jq -r '.changes[] | [(.basis // "absolute") + " " + .statistic, .direction, (.supported // true | tostring)] | @tsv' >> "$rows"
done
# Per statistic and over all counted rows: how many intervals contained 1.
# A row compare does not count (no drift allowance: too few other campaigns
# of the plan) is tallied apart, as compare's own summary does.
awk -F'\t' -v pairs="$pairs" '
    $3 == "false" { skipped++; next }
    { n[$1]++; all++; if ($2 == "no_detectable_change") { ok[$1]++; good++ } }
    END {
        if (skipped) printf "%d rows not counted by compare (no drift allowance)\n\n", skipped
        printf "| basis and statistic | rows | no change | coverage |\n|---|---:|---:|---:|\n"
        for (s in n) { split(s, k, " "); basis[k[1]] += n[s]; bok[k[1]] += ok[s]
            printf "| %s | %d | %d | %.1f%% |\n", s, n[s], ok[s], 100 * ok[s] / n[s] }
        for (b in basis) printf "| %s, all | %d | %d | %.1f%% |\n", b, basis[b], bok[b], 100 * bok[b] / basis[b]
        printf "| all | %d | %d | %.1f%% |\n\n%d pairs\n", all, good, 100 * good / all, pairs
        for (b in basis) {
            tol = 1.96 * sqrt(0.95 * 0.05 / basis[b])
            printf "%s rows: 95%% ± %.1f%% (binomial, %d rows): %s\n", b, 100 * tol, basis[b],
                (bok[b] / basis[b] >= 0.95 - tol) ? "holds" : "does NOT hold"
        }
    }' "$rows"
