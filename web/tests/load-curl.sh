#!/usr/bin/env bash
# The readers load of docs/benchmarks.md with curl as the client: READERS
# concurrent keep-alive transfers (curl --parallel) of REQUESTS GETs of PATH
# in all, on a loopback daemon; prints percentiles like load.mjs. curl is C
# and stays far from saturating its core where node's client does (a 374 KB
# report at 3,000 req/s keeps load.mjs's own core busy, so its tail is the
# client's queue, not the daemon's).
#   web/tests/load-curl.sh http://127.0.0.1:7878 /api/campaigns/1/report [readers] [requests]
set -euo pipefail
BASE=$1; PATH_=$2; READERS=${3:-50}; REQUESTS=${4:-2000}
case "$BASE" in http://127.0.0.1:*|http://localhost:*|http://\[::1\]:*) ;; *) echo "loopback only" >&2; exit 2 ;; esac
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
for _ in $(seq "$REQUESTS"); do printf 'url = "%s%s"\noutput = "/dev/null"\n' "$BASE" "$PATH_"; done > "$WORK/config"
HEADERS=()
[ -n "${ACCEPT_ENCODING:-}" ] && HEADERS=(-H "accept-encoding: $ACCEPT_ENCODING")
START=$(date +%s.%N)
curl -sS --no-progress-meter -Z --parallel-max "$READERS" "${HEADERS[@]}" -K "$WORK/config" \
  -w '%{http_code} %{time_total} %{size_download}\n' > "$WORK/times"
END=$(date +%s.%N)
python3 - "$PATH_" "$READERS" "$WORK/times" "$START" "$END" <<'PY'
import json, sys
path, readers, times, start, end = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
rows = [line.split() for line in open(times)]
bad = [r for r in rows if r[0] != "200"]
if bad:
    sys.exit(f"{len(bad)} answers were not 200, e.g. {bad[0]}")
ms = sorted(float(r[1]) * 1000 for r in rows)
q = lambda p: round(ms[min(len(ms) - 1, int(p * len(ms)))], 1)
wall = end - start
print(json.dumps({"path": path, "client": "curl", "readers": readers, "requests": len(ms),
    "response_bytes": int(rows[-1][2]), "wall_s": round(wall, 2), "req_per_s": round(len(ms) / wall, 1),
    "ms": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": round(ms[-1], 1)}}))
PY
