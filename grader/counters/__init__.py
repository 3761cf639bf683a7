"""Concept evidence from the GPU's own counters: Nsight Compute (ncu) around a small
profiling entry that launches the submission (and, once per GPU, the reference and the
baseline) on the stage's benchmark case, the size that is timed ([counters] in assignment.toml:
grader.course.counter_spec).

model.py (typed results and the reason enum), ncu.py (finding ncu, its command line, reading
its messages), raw_csv.py (its --csv --page raw output), entry.py (the profiling entry, run
under ncu in the worker's sandbox), runner.py (the parent side: whether counters can be read
here, the runs, started beside the grading's worker), cache.py (the trusted kernels' counters,
kept per GPU), selection.py (which launches are profiled), indicators.py (counters -> the
stage's indicators), lesson.py (the one line on the stage's lesson), view.py (what feedback
shows), terminal.py, concept.py (the graded `concept` check), grading.py (when a grading reads
them: by default where this machine can, --counters, --no-counters).
docs/counters.md says how it fits together.
"""
