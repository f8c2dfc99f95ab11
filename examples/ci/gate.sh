#!/bin/sh
# The steps of docs/ci.md's job after the two builds: one counterbalanced
# campaign with the main build and the pull request's build as two arms,
# then the gate, which writes the markdown to post and the JUnit XML.
# Exits with the gate's code: 0 pass, 1 regression, 2 could not judge
# (a campaign whose runs failed cannot be judged either).
#
#   MAIN_PLUGIN=build/main/kv-basic.wasm PR_PLUGIN=build/pr/kv-basic.wasm \
#     COMMIT=$GITHUB_SHA examples/ci/gate.sh
set -u
BLOCKLAB=${BLOCKLAB:-blocklab}
DATA=${DATA:-blocklab-data}
PLAN=${PLAN:-$(dirname "$0")/pr-gate.toml}
OUT=${OUT:-.}
MAIN_PLUGIN=${MAIN_PLUGIN:?the main build of the plugin (a .wasm path, or builtin)}
PR_PLUGIN=${PR_PLUGIN:?the pull request build of the plugin (a .wasm path, or builtin)}
# A busy wait added to every transaction of the pr arm, in ns: the test's
# known slowdown (docs/ci.md). 0 in real use.
PR_DELAY_NS=${PR_DELAY_NS:-0}
ARMS="[{name=\"main\",baseline=true,plugin=\"$MAIN_PLUGIN\"},{name=\"pr\",plugin=\"$PR_PLUGIN\",inject_busy_ns=$PR_DELAY_NS}]"

"$BLOCKLAB" campaign --progress none --data "$DATA" \
  --tag "commit=${COMMIT:-local}" --tag "branch=${BRANCH:-local}" \
  --set "arms=$ARMS" "$PLAN" || exit 2
"$BLOCKLAB" gate latest --data "$DATA" --max-change "${MAX_CHANGE:-5%}" \
  ${STATISTIC:+--statistic "$STATISTIC"} \
  --markdown "$OUT/gate.md" --junit "$OUT/gate.xml"
