#!/usr/bin/env bash
# Rebuilds every published card in this folder from the suite's own runs (no number here was typed by hand), then
# verifies each one by re-running a random sample of its records; with a verifier's private key in
# $BENCHMARK_VERIFIER_KEY (one listed in verifier_keys.json) the result is signed into the card. Needs the data sets
# under $BENCHMARK_DATA_ROOT
# (default ../shared/data) and a trained DiaSafety detector in checkpoints/diasafety-multihead-ctx-5ep
# (bash benchmarks/diasafety_detectors.sh). Runs already in results/ are resumed, not repeated.
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCHMARK_DATA_ROOT="${BENCHMARK_DATA_ROOT:-../shared/data}"

CARDS=(
  "profanity-check diasafety"
  "diasafety-detector diasafety"
  "blenderbot-small diasafety_chatbot" "blenderbot-medium diasafety_chatbot" "blenderbot-large diasafety_chatbot"
  "dialogpt-small diasafety_chatbot" "dialogpt-medium diasafety_chatbot" "dialogpt-large diasafety_chatbot"
  "plato2-base diasafety_chatbot" "plato2-large diasafety_chatbot"
  "ricota-chatgpt-v1 ricota" "ricota-solar ricota"
)
for entry in "${CARDS[@]}"; do rm -rf "submissions/${entry%% *}"; done
for entry in "${CARDS[@]}"; do
  read -r model task <<<"$entry"
  out=$(python -m benchmark model="$model" task="$task" progress=false | tail -1)
  python -m benchmark.submit "$(dirname "${out#score card: }")" --to submissions
  python -m benchmark.submit verify "submissions/$model/$task.json" --n 50 ${BENCHMARK_VERIFIER_KEY:+--key "$BENCHMARK_VERIFIER_KEY"}
done
python -m benchmark.submit validate
