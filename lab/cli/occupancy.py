"""`lab occupancy FILE`: registers, shared memory, spills and theoretical occupancy of any
kernel, with lecture 3's question: what if each thread used one more register?"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from grader.backends.base import CompileError, KernelResources
from grader.backends.nvcc import compile_cubin
from grader.backends.registry import BackendKind
from grader.course.checks.source_checks import SubmissionError, read_submission, strip_comments
from grader.course.occupancy import HOPPER_SM90, device_limits, next_register_cliff, occupancy
from grader.course.sinks import for_terminal
from lab.cli.course import load_catalog, load_stage
from lab.cli.typer_app import STUDENTS, app, console, fail


def _parse_block(text: str) -> int:
    try:
        dims = [int(part) for part in text.lower().replace("*", "x").split("x")]
    except ValueError:
        fail(f"--block {text!r}: write threads per block as 256 or 32x8")
    if not dims or any(d <= 0 for d in dims):
        fail(f"--block {text!r}: dimensions must be positive")
    total = 1
    for d in dims:
        total *= d
    return total


def _parse_defines(items: list[str]) -> dict[str, int | float]:
    defines: dict[str, int | float] = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.isidentifier():
            fail(f"-D {item!r}: write NAME=VALUE")
        try:
            defines[name] = int(value or 1)
        except ValueError:
            try:
                defines[name] = float(value)
            except ValueError:
                fail(f"-D {item!r}: the value must be a number")
    return defines


def _cuda_resources(source: str, defines: dict[str, int | float], name: str,
                    kernel: str | None) -> tuple[str, KernelResources, dict[str, int], str]:
    limits, where = HOPPER_SM90, "no CUDA GPU here: limits of an sm_90 GPU (H100/H200)"
    arch = "sm_90"
    try:
        from grader.backends.cuda import KIND as CUDA
        from grader.backends.discovery import discover

        if discover((CUDA,)).targets:
            from grader.backends.cuda import CudaBackend

            backend = CudaBackend(0)
            limits, where, arch = device_limits(backend.info.limits), backend.info.name, backend.arch
            backend.close()
    except Exception:  # noqa: BLE001 - fall back to the sm_90 limits and say so
        pass
    try:
        cubin = compile_cubin(source, defines, name, arch=arch)
    except CompileError as error:
        fail(f"{name} does not compile: {error.log.splitlines()[0] if error.log else ''}", 1)
    if not cubin.resources:
        fail(f"{name}: no kernel found in the compiled code", 1)
    chosen = kernel or next(iter(cubin.resources))
    if chosen not in cubin.resources:
        fail(f"no kernel {chosen!r} in {name} (found: {', '.join(cubin.resources)})")
    return chosen, cubin.resources[chosen], limits, where


def _device_resources(kind: BackendKind, source: str, defines: dict[str, int | float], name: str,
                      kernel: str | None, device: str | None) -> tuple[str, KernelResources, dict[str, int], str]:
    """The resources the backend's compiler reports for the kernel, on a device of its here."""
    from grader.backends.discovery import NoDeviceError, choose, discover

    try:
        target = choose(discover((kind,)), kind, device)
    except NoDeviceError as error:
        fail(str(error))
    backend = kind.open(target.index)
    entries = [m.group("name") for m in kind.syntax.declaration.finditer(strip_comments(source))]
    chosen = kernel or (entries[0] if entries else None)
    if chosen is None:
        fail(f"{name}: no {kind.syntax.entry} function found", 1)
    try:
        compiled = backend.compile(source, [chosen], defines, name)
    except CompileError as error:
        fail(f"{name} does not compile: {error.log.splitlines()[0] if error.log else ''}", 1)
    if backend.info.kind != "gpu":
        where = f"{backend.info.name} is a {backend.info.kind} device: occupancy applies to GPUs"
    else:
        where = backend.info.name
    return chosen, compiled[chosen].resources, device_limits(backend.info.limits), where


@app.command("occupancy", rich_help_panel=STUDENTS)
def occupancy_command(
    file: Path = typer.Argument(..., help="a .cu or .cl kernel file"),
    stage: str = typer.Option(None, "--stage", "-s", help="take defines and block size from this stage"),
    block: str = typer.Option(None, "--block", help="threads per block, e.g. 256 or 32x8"),
    define: list[str] = typer.Option([], "-D", help="NAME=VALUE passed to the compiler"),
    kernel: str = typer.Option(None, "--kernel", "-k", help="entry point (default: the first)"),
    extra_registers: int = typer.Option(1, "--extra-registers", help="what if each thread used N more registers"),
    device: str = typer.Option(None, "--device", "-d", help="device index or name (not for CUDA: nvcc reports "
                               "its kernels' resources for the first GPU)"),
) -> None:
    """Registers, shared memory, spills and theoretical occupancy of a kernel on this device."""
    try:
        submission = read_submission(file)
    except SubmissionError as error:
        fail(str(error), 2 if error.usage else 1)
    kind = submission.backend
    defines: dict[str, int | float] = {}
    threads = None
    dynamic = 0  # bytes of dynamic shared memory the stage launches a CUDA kernel with
    if stage:
        spec = load_stage(load_catalog(), stage)
        defines.update(spec.defines)
        _, shape = spec.launch_shape(spec.test_cases[0])
        threads = 1
        for b in shape:
            threads *= b
        kernel = kernel or spec.kernel.name
        dynamic = spec.dynamic_shared_bytes(spec.test_cases[0]) if kind.dynamic_shared is not None else 0
    defines.update(_parse_defines(define))
    if block:
        threads = _parse_block(block)
    if threads is None:
        fail("give --block (threads per block) or --stage")
    if kind.name == "cuda":  # nvcc reports a kernel's resources with no GPU here (an sm_90's limits then)
        name, res, limits, where = _cuda_resources(submission.source, defines, str(file), kernel)
    else:
        name, res, limits, where = _device_resources(kind, submission.source, defines, str(file), kernel, device)

    table = Table(title=for_terminal(f"{name} on {where}"), box=None, header_style="bold", title_justify="left")
    table.add_column("resource")
    table.add_column("value", justify="right")
    show = lambda v: "not reported" if v is None else str(v)  # noqa: E731
    table.add_row("threads per block", str(threads))
    table.add_row("registers per thread", show(res.registers))
    table.add_row("shared memory per block (bytes)", show(res.shared_bytes))
    if dynamic:
        table.add_row("dynamic shared memory the stage adds (bytes)", str(dynamic))
    table.add_row("spilled (bytes)", show(res.spill_bytes))
    table.add_row("local memory per thread (bytes)", show(res.local_bytes))
    console.print(table)
    if res.registers is None:
        console.print("theoretical occupancy: not available (this device does not report registers)")
        return
    now = occupancy(threads, res.registers, (res.shared_bytes or 0) + dynamic, limits)
    if now is None:
        console.print("theoretical occupancy: not available (this device does not report its limits)")
        return
    console.print(Text(
        f"theoretical occupancy {100 * now.fraction:.0f}%: {now.blocks_per_sm} blocks = "
        f"{now.active_warps} of {now.max_warps} warps per SM, limited by {now.limited_by} "
        f"(blocks allowed by threads {now.limits['threads']}, registers {now.limits['registers']}, "
        f"shared memory {now.limits['shared memory']}, block limit {now.limits['blocks per SM']})"))
    more = occupancy(threads, res.registers + extra_registers, (res.shared_bytes or 0) + dynamic, limits)
    if more is not None:
        change = "no change" if more.blocks_per_sm == now.blocks_per_sm else (
            f"{more.blocks_per_sm} blocks, {100 * more.fraction:.0f}%, limited by {more.limited_by}")
        console.print(f"with {extra_registers} more register(s) per thread ({res.registers + extra_registers}): {change}")
    cliff = next_register_cliff(threads, res.registers, (res.shared_bytes or 0) + dynamic, limits)
    if cliff is not None:
        console.print(f"occupancy first drops at {cliff} registers per thread")
