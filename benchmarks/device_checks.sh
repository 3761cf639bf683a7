#!/usr/bin/env bash
# Everything CI cannot show, in one run on a GPU machine (both backends): the adversarial
# corpus (with the verdict each case got), --sanitize on CUDA, every reference graded and
# timed, and a class batch with its timing.
#   cp -r ../shared/device .gpu-kit     # once; then on the GPU machine, from the project root:
#   bash benchmarks/device_checks.sh    # results under $OUT (or ./device-results)
# PARTS picks what runs (default: "adversarial sanitize course batch"; "curriculum" adds the
# curriculum tests: every reference, known-wrong kernel and skeleton on both backends); each
# part has its own time limit (ADVERSARIAL_S, SANITIZE_S, COURSE_S, CURRICULUM_S, BATCH_S).
set -u
cd "$(dirname "$0")/.."
out="${OUT:-device-results}"
mkdir -p "$out"
source .gpu-kit/setup.sh >/dev/null 2>&1 || { echo "gpu-kit setup failed"; exit 1; }
export PYTHONUNBUFFERED=1
parts="${PARTS:-adversarial sanitize course batch}"
wants() { [[ " $parts " == *" $1 "* ]]; }

if wants adversarial; then
    rm -f "$out/verdicts.jsonl"
    LAB_VERDICT_LOG="$out/verdicts.jsonl" timeout "${ADVERSARIAL_S:-420}" \
        python3 -m pytest -q -p no:cacheprovider tests/adversarial -rfs > "$out/adversarial.log" 2>&1
    echo "adversarial rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/adversarial.log" | tail -25
    python3 benchmarks/verdict_table.py "$out/verdicts.jsonl" > "$out/verdicts.md"
fi

if wants sanitize; then
    kernels=tests/adversarial/kernels
    for case in oob_past_end race_missing_barrier barrier_divergent reads_past_input_row; do
        echo "--- lab grade --sanitize $case.cu"
        timeout "${SANITIZE_S:-120}" python3 -m lab grade transpose_coalesced "$kernels/$case.cu" \
            --backend cuda --sanitize --no-timing --report "$out/sanitize-$case.md" 2>&1 | tail -12
    done
fi

if wants course; then
    timeout "${COURSE_S:-420}" python3 benchmarks/course_on_device.py --json "$out/course.json" \
        ${COURSE_BACKENDS:+--backends "$COURSE_BACKENDS"} > "$out/course.log" 2>&1
    echo "course rc=$?"; sed -n '/^backend /,$p' "$out/course.log"
fi

if wants curriculum; then
    timeout "${CURRICULUM_S:-420}" python3 -m pytest -q -p no:cacheprovider tests/curriculum -rfs \
        > "$out/curriculum.log" 2>&1
    echo "curriculum rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/curriculum.log" | tail -25
fi

if wants batch; then
    rm -rf /tmp/lab-class /tmp/lab-results
    python3 -c "
from pathlib import Path
from lab.catalog import default_catalog
from tests.batch.classroom import build
print('class of', build(Path('/tmp/lab-class'), default_catalog()).submissions, 'submissions')"
    start=$(date +%s)
    timeout "${BATCH_S:-420}" python3 -m lab batch /tmp/lab-class --out /tmp/lab-results --time-limit 10 \
        > "$out/batch.log" 2>&1
    echo "batch rc=$? in $(( $(date +%s) - start )) s"; tail -15 "$out/batch.log"
    cp /tmp/lab-results/summary.html /tmp/lab-results/gradebook.csv "$out/" 2>/dev/null || true
fi
