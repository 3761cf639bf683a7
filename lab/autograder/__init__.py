"""The lab as a Gradescope autograder.

`lab gradescope STAGE...` (build.py) makes the zip an instructor uploads: setup.sh and
run_autograder (scripts/), the lab as a wheel, the course (assignments/ and reference/) and
which stages the assignment holds (config.py). In Gradescope's container, run_autograder runs
`python -m lab.autograder`, which reads the student's upload (uploads.py), grades each stage on
PoCL through grader.grading.grade (run.py), asks the course GPU server for the speed
where the assignment names one (course_server.py), and writes results.json (results.py) in the
format grader.gradescope makes. paths.py says where Gradescope's folders are.
"""
