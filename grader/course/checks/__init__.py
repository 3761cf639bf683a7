"""What is read from a submission's source before any of it runs: what a source file may be
(source_checks), barriers under thread-dependent conditions (divergent_barriers), shared memory
read across threads with no barrier between (missing_barriers), the file's macros expanded as
the preprocessor would (macros), and the source reduced to what survives trivial edits
(normalised_source: its digests tell a handed-out reference, or two similar submissions)."""
