#!/usr/bin/env bash
# Everything CI cannot show, in one run on a GPU machine (both backends): the adversarial
# corpus, every reference graded and timed, and a class batch with its timing.
#   cp -r ../shared/device .gpu-kit     # once; then on the GPU machine, from the project root:
#   bash benchmarks/device_checks.sh    # results under $OUT (or ./device-results)
# Each part has its own time limit so that one slow part cannot hide the others' output.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-device-results}"
mkdir -p "$out"
source .gpu-kit/setup.sh >/dev/null 2>&1 || { echo "gpu-kit setup failed"; exit 1; }
export PYTHONUNBUFFERED=1

timeout "${ADVERSARIAL_S:-300}" python3 -m pytest -q -p no:cacheprovider tests/adversarial -rfs \
    > "$out/adversarial.log" 2>&1
echo "adversarial rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/adversarial.log" | tail -20

timeout "${COURSE_S:-300}" python3 benchmarks/course_on_device.py --json "$out/course.json" \
    > "$out/course.log" 2>&1
echo "course rc=$?"; sed -n '/^backend /,$p' "$out/course.log"

rm -rf /tmp/lab-class /tmp/lab-results
python3 -c "
from pathlib import Path
from lab.catalog import default_catalog
from tests.batch.classroom import build
print('class of', build(Path('/tmp/lab-class'), default_catalog()).submissions, 'submissions')"
start=$(date +%s)
timeout "${BATCH_S:-300}" python3 -m lab batch /tmp/lab-class --out /tmp/lab-results --time-limit 10 \
    > "$out/batch.log" 2>&1
echo "batch rc=$? in $(( $(date +%s) - start )) s"; tail -15 "$out/batch.log"
cp /tmp/lab-results/summary.html /tmp/lab-results/gradebook.csv "$out/" 2>/dev/null || true
