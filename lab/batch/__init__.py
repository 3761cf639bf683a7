"""Grading a whole class: find the submissions in a folder of student folders, grade each one
through the same isolated path as `lab grade`, keep every result on disk keyed by what it was
graded from (so a rerun grades only what changed), and write the class outputs: per-student
feedback, Gradescope results, a gradebook and a class summary.

One concept per module:
    layout      SUBMISSIONS/<student>/<stage>.{cu,cl}: what is graded, what is not and why
    devices     which devices grade which backend, and how many workers each gets
    keys        the batch's grading options (GradeOptions) and a result's cache key: what it was graded from
    store       RESULTS/<student>/<stage>/: atomic writes, result.json last, resume, lock
    failures    a failed result's reason, grouped for the class and free of names
    outcome     one submission's result, as the class outputs need it
    plan        what to grade now, what is up to date, what cannot be graded here
    errors      the report of a submission the batch could not grade
    runner      the worker threads, one per GPU or --jobs on a CPU device
    processes   stopping the grading children of an interrupted batch
    gradebook   gradebook.csv: one row per student, one column per stage
    not_graded  not_graded.csv and not_graded.json
    summary     the class summary: pass rates, speedups, failure reasons, batch timing
    charts      the inline SVG speedup histogram of the summary
    html        summary.html from templates/batch_summary.html.j2
    outputs     the output table: each result's files (feedback, Gradescope's results.json; their
                formats are grader.outputs') and the class files at the top of RESULTS
    lms_outputs what the LMS files are rendered from: who each student is there, the warnings
    run_end     the end of a class run, here or on Slurm: its statistics, then the class files

On a Slurm cluster (`lab batch slurm`, docs/batch.md):
    slurm          sbatch and squeue: the job array, the final job, the job script
    cluster_run    a run's folder in RESULTS/.lab-slurm/: what to grade, jobs, task records
    claims         which array task grades which submission (O_EXCL claim files)
    cluster_plan   what a run grades: up to date on whatever GPU graded it
    cluster_task   one array task: claim, grade, record the node; stop cleanly on a signal
    cluster_gather the class after a run: outcomes, what is left, which GPUs graded which share
    cluster_status a run's state: done, running, pending, failed; each task's and the final job's
"""

from __future__ import annotations
