// verdict: compiles failed #include is not allowed
// Tries to submit the course's own reference by including it. A submission is one
// self-contained file: any #include is refused before compiling (the test also tries the
// spellings that dodge a naive check: %:include, a line splice, #include_next, #import).
#include "../../../reference/transpose_coalesced/solution.cl"
