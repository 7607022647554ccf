#!/usr/bin/env bash
# Train the DiaSafety detectors the report compares, then write the report (Tables 4 and 5 beside the paper).
# Needs the DiaSafety splits under $BENCHMARK_DATA_ROOT (or data_root=…). On a 2-core CPU this takes about
# 1.5 hours. Extra arguments go to every training command, e.g. `encoder=roberta-base`.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m benchmark.detector train design=multihead with_context=true epochs=3 "$@"
python -m benchmark.detector train design=one_vs_all with_context=true epochs=2 "$@"
python -m benchmark.detector train design=one_vs_all with_context=false epochs=2 "$@"
python -m benchmark.detector train design=multiclass with_context=true epochs=2 "$@"
# longer training at a higher learning rate: how much of the gap to the paper it closes
python -m benchmark.detector train design=multihead with_context=true epochs=5 lr=1e-4 \
  output_dir=checkpoints/diasafety-multihead-ctx-5ep "$@"
python -m benchmark.detector evaluate   # the five folders above (conf/detector_evaluate.yaml)
