#!/usr/bin/env bash
# Rebuilds every published card in this folder from the suite's own runs (no number here was typed by hand).
# Needs the data sets under $BENCHMARK_DATA_ROOT (default ../shared/data) and a trained DiaSafety detector in
# checkpoints/diasafety-multihead-ctx-5ep (bash benchmarks/diasafety_detectors.sh). Then verifies each card.
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCHMARK_DATA_ROOT="${BENCHMARK_DATA_ROOT:-../shared/data}"

publish() {  # model task
  out=$(python -m benchmark model="$1" task="$2" progress=false | tail -1)
  python -m benchmark.submit "$(dirname "${out#score card: }")" --to submissions
  python -m benchmark.submit verify "submissions/$1/$2.json" --n 50
}

publish profanity-check diasafety
publish diasafety-detector diasafety
for m in blenderbot-small blenderbot-medium blenderbot-large dialogpt-small dialogpt-medium dialogpt-large \
         plato2-base plato2-large; do
  publish "$m" diasafety_chatbot
done
publish ricota-chatgpt-v1 ricota
publish ricota-solar ricota
python -m benchmark.submit validate
