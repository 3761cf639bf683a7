"""The grader: one submitted kernel through compile, correctness, timing and scoring,
in a child process, into a typed report that feedback templates render."""

GRADER_VERSION = "4"  # 4: one score model (pending speed, no score when ungraded), unchanged handouts fail; 3: typed steps; benchmark-size check against the reference on the device; no CPU timing by default
