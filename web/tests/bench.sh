#!/usr/bin/env bash
# The daemon benchmark of docs/benchmarks.md, on loopback only:
#   web/tests/bench.sh [BLOCKLAB_BINARY] [PLUGIN_DIR]
# 1. a phase-a-sized campaign (examples/quick.toml, measure.measured=50:
#    11 workloads x 3 arms x 6 blocks) run by the CLI;
# 2. the daemon on it: report latency under 50 concurrent readers (bounded:
#    50 x 40 requests), the campaign page's load time in Chromium;
# 3. an A/A campaign (two identical builtin arms) without and then with
#    UI load running throughout, to see whether serving moves its ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/blocklab}
PLUGINS=$(realpath "${2:-target/plugins}")
WORK=$(mktemp -d)
trap 'kill $DAEMON 2>/dev/null || true; rm -rf "$WORK"' EXIT
sed "s#target/plugins#$PLUGINS#g" examples/quick.toml > "$WORK/quick.toml"
echo "== phase-a-sized campaign"
time "$BIN" campaign "$WORK/quick.toml" --set measure.measured=50 --data "$WORK/data" --progress none > /dev/null
"$BIN" serve --data "$WORK/data" --listen 127.0.0.1:0 > "$WORK/serve.out" 2> "$WORK/serve.err" &
DAEMON=$!
until grep -q listening "$WORK/serve.out" 2>/dev/null; do sleep 0.1; done
URL=$(sed -n 's#.*listening on \(http://[0-9.:]*\)/#\1#p' "$WORK/serve.out")
TOKEN=$(cat "$WORK/data/token")
echo "== first report request (builds the report: bootstrap of every effect)"
curl -s -o /dev/null -w '%{time_total} s, %{size_download} bytes\n' "$URL/api/campaigns/1/report"
echo "== 50 concurrent readers x 40 requests (node's client, then curl's: node saturates its own core on the report)"
for path in /api/health /api/campaigns/1/report /api/campaigns/1 /api/campaigns "/api/campaigns/1/latency?workload=get100"; do
  node web/tests/load.mjs "$URL" "$path" 50 40
  web/tests/load-curl.sh "$URL" "$path" 50 2000
  ACCEPT_ENCODING=gzip web/tests/load-curl.sh "$URL" "$path" 50 2000
done
echo "== campaign page load in Chromium"
node web/tests/pageload.mjs "$URL" 1 5
aa() {
  cat <<PLAN
name = "aa-$1"
seed = 20261130
blocks = 12
plugin = "builtin"
[measure]
warmup = 1000
measured = 20000
[bootstrap]
resamples = 20000
[gates]
quiescence_window_ms = 20
wait_timeout_s = 0.2
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "a-again"
PLAN
}
wait_done() {
  until curl -s "$URL/api/campaigns/$1" | grep -q '"state":"finished"'; do sleep 0.5; done
}
effect() {
  curl -s "$URL/api/campaigns/$1/report" | node -e '
    let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => {
      const r = JSON.parse(s);
      console.log(`runs flagged by the quiescence gate: ${r.gates.flagged.length}/${r.gates.runs}`);
      for (const e of r.effects.filter((e) => ["mean_latency", "cpu_measured", "p99_latency"].includes(e.statistic)))
        console.log(`${e.statistic}: ${e.ratio.toFixed(4)} [${e.ci_low.toFixed(4)}, ${e.ci_high.toFixed(4)}] won ${e.won}/${e.blocks}`);
    });'
}
echo "== A/A without UI load"
ID=$(aa quiet | curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/toml' --data-binary @- "$URL/api/campaigns" | sed 's/{"id":\([0-9]*\).*/\1/')
wait_done "$ID"; effect "$ID"
echo "== A/A with 50 readers on the report throughout (load client on CPUs ${LOAD_CPUS:-0})"
ID=$(aa loaded | curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/toml' --data-binary @- "$URL/api/campaigns" | sed 's/{"id":\([0-9]*\).*/\1/')
rounds=0
# Bounded: at most 200 rounds of 50 x 10 requests.
while ! curl -s "$URL/api/campaigns/$ID" | grep -q '"state":"finished"' && [ $rounds -lt 200 ]; do
  # The load client itself stays on the runner CPUs with the daemon, so the
  # check is about serving, not about a third process on the client CPUs.
  taskset -c "${LOAD_CPUS:-0}" node web/tests/load.mjs "$URL" /api/campaigns/1/report 50 10 > /dev/null
  rounds=$((rounds + 1))
done
wait_done "$ID"; echo "load rounds during the campaign: $rounds (x 500 requests)"; effect "$ID"
