#!/usr/bin/env bash
# Everything CI cannot show, in one run on a GPU machine (both backends): the adversarial
# corpus (with the verdict each case got), --sanitize on CUDA, every reference graded and
# timed, and a class batch with its timing.
#   cp -r ../shared/device .gpu-kit     # once; then on the GPU machine, from the project root:
#   bash benchmarks/device_checks.sh    # results under $OUT (or ./device-results)
# PARTS picks what runs (default: "adversarial sanitize course batch"; "curriculum" adds the
# curriculum tests: every reference, known-wrong kernel and skeleton on both backends); each
# part has its own time limit (ADVERSARIAL_S, SANITIZE_S, COURSE_S, CURRICULUM_S, BATCH_S).
# More parts, each a figure an issue asks for: "sandboxed" (tests/sandbox and the adversarial
# corpus with the worker sandboxed), "speed" (grading_speed.py: a warm-up pass, then against
# OLD_TREE where it is set), "stability" (speedup_stability.py: 10 gradings a reference),
# "queue" (concurrent_gradings.py, both backends), "overhead" (sandbox_overhead.py, against
# OLD_TREE where set), "counters" (counters_on_gpu.py, as root), "ptx" (opencl_ptx_under_cuda.py,
# plain and under ncu: can an OpenCL kernel be profiled through CUDA), "placement"
# (placement_sensitivity.py: the naive transpose's time against where its buffers land and what
# other processes do), "compile" (compile_speed.py: nvcc against NVRTC), "class" (class_throughput.py:
# the 200-submission class on 1 GPU and on every GPU (GPUS, default "1"), the agreement with 12 files
# graded alone, against OLD_TREE where set, REPEAT times in turn, CLASS_ARGS added to lab batch run:
# e.g. "--per-gpu 8"), "steps" (session_member_steps.py: what each step of a session member costs), "server" (server_load.py --batch-compare, counters off
# and on for both) and "submit" (submit_latency.py: lab submit on an idle server). A lent machine
# runs a command 10 minutes at most: give each of these a run of its own.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-device-results}"
mkdir -p "$out"
source .gpu-kit/setup.sh >/dev/null 2>&1 || { echo "gpu-kit setup failed"; exit 1; }
export PYTHONUNBUFFERED=1
# Compiled once, as an installed lab is: the lent machines set PYTHONDONTWRITEBYTECODE, under
# which every grading's processes would compile their sources again.
python3 -m compileall -q lab grader >/dev/null 2>&1 || true
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
from grader.course.catalog import default_catalog
from tests.batch.classroom import build
print('class of', build(Path('/tmp/lab-class'), default_catalog()).submissions, 'submissions')"
    start=$(date +%s)
    timeout "${BATCH_S:-420}" python3 -m lab batch run /tmp/lab-class --out /tmp/lab-results --time-limit 10 \
        > "$out/batch.log" 2>&1
    echo "batch rc=$? in $(( $(date +%s) - start )) s"; tail -15 "$out/batch.log"
    cp /tmp/lab-results/summary.html /tmp/lab-results/gradebook.csv "$out/" 2>/dev/null || true
fi

if wants sandboxed; then
    LAB_SANDBOX=on timeout "${SANDBOXED_S:-480}" python3 -m pytest -q -p no:cacheprovider tests/sandbox \
        tests/adversarial -rfs > "$out/sandboxed.log" 2>&1
    echo "sandboxed rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/sandboxed.log" | tail -12
fi

if wants speed; then
    timeout "${SPEED_S:-200}" python3 benchmarks/grading_speed.py --repeat 1 --json "$out/speed-warm.json" \
        > "$out/speed-warm.txt" 2> "$out/speed-warm.err"
    echo "speed (warm-up pass) rc=$?"; sed -n '/^summary/,$p' "$out/speed-warm.txt"
    if [ -n "${OLD_TREE:-}" ]; then
        timeout "${SPEED_AB_S:-380}" python3 benchmarks/grading_speed.py --trees "new=.,old=$OLD_TREE" --repeat 1 \
            --markdown --json "$out/speed-ab.json" > "$out/speed-ab.txt" 2> "$out/speed-ab.err"
        echo "speed against $OLD_TREE rc=$?"; sed -n '/summary/,$p' "$out/speed-ab.txt"
    fi
fi

if wants stability; then
    timeout "${STABILITY_S:-400}" python3 benchmarks/speedup_stability.py --repeat 10 > "$out/stability.txt" \
        2> "$out/stability.err"
    echo "stability rc=$?"; cat "$out/stability.txt"
fi

if wants queue; then
    for backend in cuda opencl; do
        timeout "${QUEUE_S:-240}" python3 benchmarks/concurrent_gradings.py --backend "$backend" --count 8 \
            --alone 8 --stages transpose_coalesced,reduce_unrolled --unqueued --json "$out/queue-$backend.json" \
            > "$out/queue-$backend.txt" 2>&1
        echo "queue $backend rc=$?"; sed -n '/^device:/,$p' "$out/queue-$backend.txt"
    done
fi

if wants overhead; then
    timeout "${OVERHEAD_S:-500}" python3 benchmarks/sandbox_overhead.py \
        --trees "new=.${OLD_TREE:+,old=$OLD_TREE}" --stages transpose_coalesced,reduce_unrolled --repeat 8 \
        > "$out/overhead.txt" 2> "$out/overhead.err"
    echo "overhead rc=$?"; cat "$out/overhead.txt"
fi

if wants counters; then
    timeout "${COUNTERS_S:-540}" python3 benchmarks/counters_on_gpu.py --json "$out/counters.json" > "$out/counters.txt" 2>&1
    echo "counters rc=$?"; sed -n '/^# Summary/,$p' "$out/counters.txt"
fi

if wants ptx; then
    timeout 120 python3 benchmarks/opencl_ptx_under_cuda.py > "$out/ptx.txt" 2>&1
    echo "ptx rc=$?"; cat "$out/ptx.txt"
    timeout 120 python3 benchmarks/opencl_ptx_under_cuda.py --launch-only --zero-envregs > "$out/ptx-zero.txt" 2>&1
    echo "ptx, %envreg read as 0, rc=$?"; cat "$out/ptx-zero.txt"
    timeout 180 ncu --metrics smsp__sectors_per_request_global_op_st.ratio,gpu__time_duration.sum \
        python3 benchmarks/opencl_ptx_under_cuda.py --launch-only --zero-envregs > "$out/ptx-ncu.txt" 2>&1
    echo "ptx under ncu rc=$?"; tail -25 "$out/ptx-ncu.txt"
fi

if wants placement; then
    timeout 240 python3 benchmarks/placement_sensitivity.py > "$out/placement.txt" 2> "$out/placement.err"
    echo "placement rc=$?"; sed -n '/^naive transpose/,$p' "$out/placement.txt"
fi

if wants compile; then
    timeout 240 python3 benchmarks/compile_speed.py > "$out/compile.txt" 2> "$out/compile.err"
    echo "compile rc=$?"; cat "$out/compile.txt"
fi

if wants class; then
    timeout "${CLASS_S:-560}" python3 benchmarks/class_throughput.py --trees "new=.${OLD_TREE:+,old=$OLD_TREE}" \
        --gpus "${GPUS:-1}" --students "${STUDENTS:-50}" --alone 12 --repeat "${REPEAT:-1}" \
        --batch-args="${CLASS_ARGS:-}" --json "$out/class.json" > "$out/class.md" 2> "$out/class.err"
    echo "class rc=$?"; cat "$out/class.md"
fi

if wants steps; then
    timeout "${STEPS_S:-120}" python3 benchmarks/session_member_steps.py > "$out/steps.md" 2> "$out/steps.err"
    echo "steps rc=$?"; cat "$out/steps.md"
fi

if wants server; then
    for counters in off on; do
        timeout "${SERVER_S:-250}" python3 benchmarks/server_load.py --students 50 --each 2 --clients 8 --spread 10 \
            --gpus "${GPUS:-1}" --batch-compare --counters "$counters" --json "$out/server-$counters.json" \
            > "$out/server-$counters.txt" 2> "$out/server-$counters.err"
        echo "server, counters $counters, rc=$?"; grep -E "gradings_per_minute|server_over" "$out/server-$counters.txt"
    done
fi

if wants submit; then
    timeout "${SUBMIT_S:-120}" python3 benchmarks/submit_latency.py --repeat 5 --gpus 1 > "$out/submit.md" \
        2> "$out/submit.err"
    echo "submit rc=$?"; cat "$out/submit.md"
fi
