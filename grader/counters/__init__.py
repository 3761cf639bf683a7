"""Concept evidence from the GPU's own counters: Nsight Compute (ncu) around a small
profiling entry that launches the submission, the reference and the baseline once each on
the stage's profiling case ([counters] in assignment.toml: lab.counter_spec).

model.py (typed results and the reason enum), ncu.py (finding ncu, its command line, reading
its messages), raw_csv.py (its --csv --page raw output), entry.py (the profiling entry, run
under ncu in the worker's sandbox), runner.py (the parent side: whether counters can be read
here, and the run), indicators.py (counters -> the stage's indicators), view.py (what feedback
shows, side by side, with the sentence tying them to the lesson), concept.py (the graded
`concept` check), grading.py (the optional step after correctness in `lab grade`).
docs/counters.md says how it fits together; docs/performance.md has what it costs.
"""
