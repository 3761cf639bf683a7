"""The grader: one submitted kernel through compile, correctness, timing and scoring,
in a child process, into a typed report that feedback templates render."""

GRADER_VERSION = "1"
