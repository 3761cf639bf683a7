"""The course: what a stage is (its spec, the catalog of stages in course order, the
expressions its launch and sizes are written in, its counter spec), the problems' trusted
oracles (problems/), the checks read from a submission's source before it runs (checks/), the
handouts, the safe sinks for student text, and the students' copy's configuration and manifest.

In a checkout, assignments/ and reference/ here link to the checkout's own; a wheel carries
copies of them (catalog.course_root finds whichever is there).
"""
