"""The grader: one submitted kernel through compile, correctness, timing and scoring,
in a child process, into a typed report that feedback templates render."""

GRADER_VERSION = "2"  # 2: divergent barriers fail; outputs poisoned on the device; phase times
