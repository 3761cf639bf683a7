"""Synthetic counters for tests: typed records standing in for an ncu run (they claim nothing
about any kernel; the numbers follow the H100 calibration of 2026-11-23, scaled to 1024 x 1024)."""

from grader.counters.model import CounterReading, KernelCounters, ProfileResult

ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SHARED_LD = "smsp__inst_executed_op_shared_ld.sum"
CASE = {"width": 1024, "height": 1024}


def launch(role: str, store_sectors: float, conflicts: float = 0.0, shared_loads: float = 32768.0,
           ns: float = 10000.0) -> KernelCounters:
    return KernelCounters(role, "transpose", (
        CounterReading("gpu__time_duration.sum", ns, "nsecond"),
        CounterReading(ST_SECTORS, store_sectors, "sector"),
        CounterReading(ST_REQUESTS, 32768.0),
        CounterReading(CONFLICTS, conflicts),
        CounterReading(SHARED_LD, shared_loads)))


def run(yours_sectors_per_request: float, with_baseline: bool = True) -> ProfileResult:
    kernels = []
    if with_baseline:
        kernels.append(launch("baseline", 32 * 32768, 0.0, 0.0))
    kernels.append(launch("reference", 4 * 32768, 1_023_919))
    kernels.append(launch("submission", yours_sectors_per_request * 32768, 1_023_919))
    return ProfileResult(CASE, tuple(kernels), seconds=1.5, device="Test GPU")
