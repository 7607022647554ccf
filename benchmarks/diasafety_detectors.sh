#!/usr/bin/env bash
# Train the DiaSafety detectors the report compares, then write the report (Tables 4 and 5 beside the paper).
# Needs the DiaSafety splits under $BENCHMARK_DATA_ROOT (or data_root=…). On a 2-core CPU this takes about
# 1.5 hours. Extra arguments go to every training command, e.g. `encoder=roberta-base`.
set -euo pipefail
cd "$(dirname "$0")/.."
# each into the folder conf/detector_evaluate.yaml lists
python -m benchmark.judge train diasafety-detector design=multihead with_context=true epochs=3 lr=5e-5 \
  output_dir=checkpoints/diasafety-multihead-ctx "$@"
python -m benchmark.judge train diasafety-detector design=one_vs_all with_context=true epochs=2 lr=5e-5 \
  output_dir=checkpoints/diasafety-one_vs_all-ctx "$@"
python -m benchmark.judge train diasafety-detector design=one_vs_all with_context=false epochs=2 lr=5e-5 \
  output_dir=checkpoints/diasafety-one_vs_all-noctx "$@"
python -m benchmark.judge train diasafety-detector design=multiclass with_context=true epochs=2 lr=5e-5 \
  output_dir=checkpoints/diasafety-multiclass-ctx "$@"
# the default (multihead, 5 epochs at lr 1e-4): longer training at a higher learning rate
python -m benchmark.judge train diasafety-detector "$@"
python -m benchmark.judge evaluate diasafety-detector   # the five folders above
