"""The sandbox of the worker that runs student code: bubblewrap (`bwrap`).

On PoCL a student's kernel is native code inside the worker process; on a GPU the driver and
the compiler handle what the student wrote. A memory-corruption exploit there must not reach
the network, other students' submissions and results, the gradebook, the grader's caches or
the machine. The worker therefore runs under bwrap (Flatpak's sandbox: small, audited, no
daemon) in namespaces of its own (no network, its own pids, IPC, hostname, cgroup view), where
the only files are read-only views of the system's libraries, the Python installation, the
project and the course, the GPU device files, and an empty temporary folder of its own (its
HOME). Nothing else of the host's file tree (home folders, submissions, results, the kernel
cache writable) is there.

- The grader runs as root: bwrap runs privileged (no user namespace needed) and the worker
  becomes an unprivileged user (LAB_SANDBOX_USER, default `nobody`) before it starts.
- The grader runs as another user: bwrap makes a user namespace, where that user stays itself
  and cannot make further namespaces.

LAB_SANDBOX=on (the default): sandbox where it can be set up, otherwise grade without one and
say so once. LAB_SANDBOX=require: refuse to grade without it (course servers).
LAB_SANDBOX=off: no sandbox (for debugging the worker with tools the sandbox hides).
LAB_BWRAP: the bwrap binary (default: `bwrap` on PATH); one that names no executable file is
an error wherever the sandbox is not off.

Standard library only: grader.worker_process imports it before `lab grade` imports the rest.
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader import settings

if TYPE_CHECKING:
    from grader.backends.registry import BackendKind, JitCache

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
MIN_BWRAP = (0, 8)  # --disable-userns, --size and --perms for --tmpfs
TMP_SIZE = 1 << 30  # bytes of the sandbox's own /tmp (a tmpfs): its only writable place
TRIAL_SECONDS = 30


@dataclass(frozen=True)
class SandboxInfo:
    """Whether a grading's worker ran sandboxed, as the Report records it."""

    sandboxed: bool
    user: str = ""  # who the worker ran as inside the sandbox
    reason: str = ""  # why it was not sandboxed


OFF = f"{settings.SANDBOX.name}=off"  # decide()'s reason where the sandbox is turned off


class SandboxUnavailable(RuntimeError):
    """LAB_SANDBOX=require and no sandbox can be set up, or a setting is wrong (an unknown
    LAB_SANDBOX value, a LAB_BWRAP that names no executable)."""


@dataclass(frozen=True)
class _Plan:
    bwrap: str
    drop: tuple[int, int] | None  # (uid, gid) the worker becomes, where the grader is root
    user: str


def mode() -> str:
    """LAB_SANDBOX: "on", "off" or "require". Raises SandboxUnavailable for any other value."""
    try:
        return str(settings.value(settings.SANDBOX))
    except settings.SettingError as error:
        raise SandboxUnavailable(str(error)) from None


# -- what the sandbox holds -------------------------------------------------------------------

def _home_ancestors() -> set[str]:
    """Folders never bound whole: /, and the home folder and everything above it."""
    found = {"/"}
    home = os.path.expanduser("~")
    if home and home != "~":
        path = Path(home).resolve()
        found.update(str(p) for p in (path, *path.parents))
    return found


def _python_paths() -> list[str]:
    """The interpreter, its standard library and every folder on its path (site-packages, the
    project: an editable install's), so the worker imports what the grader imports."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            paths.add(entry)
    return [p for p in paths if os.path.exists(p)]


def _ld_paths() -> list[str]:
    """Library folders outside /usr that the loader is told about (LD_LIBRARY_PATH,
    /etc/ld.so.conf.d): where containers put the NVIDIA driver and the CUDA libraries."""
    found = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    conf = Path("/etc/ld.so.conf.d")
    try:
        files = sorted(conf.glob("*.conf"))
    except OSError:
        files = []
    for file in files:
        try:
            lines = file.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found.extend(line.split("#")[0].strip() for line in lines
                     if line.strip().startswith("/"))
    return [p for p in found if os.path.isabs(p) and os.path.isdir(p)]


def _backend_paths() -> list[str]:
    """What every backend's drivers and tools need (its row's sandbox_paths), and the package
    of each backend registered from outside the project's code (LAB_BACKENDS), so the worker
    imports it."""
    import importlib.util

    from grader.backends import registry

    paths = [path for kind in registry.backends() for path in kind.sandbox_paths()]
    for module in registry.modules():
        top = module.split(".")[0]
        if top in CODE:
            continue
        spec = importlib.util.find_spec(top)
        paths += list(spec.submodule_search_locations or []) if spec is not None else []
        if spec is not None and spec.origin and not spec.submodule_search_locations:
            paths.append(spec.origin)
    return paths


def _kernel_cache(drop: tuple[int, int] | None) -> str | None:
    """The trusted-kernel cache, made here if missing (so entries the parent writes later are
    seen by later workers): bound read-only; None where it is off."""
    from grader.backends import kernel_cache  # standard library only

    root = kernel_cache.cache_root()
    if root is None:
        return None
    root = root.expanduser().resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
        if drop is not None and not root.stat().st_mode & 0o001:
            # The worker sheds root: let its group search the folder (entries are 0640, that group's).
            os.chown(root, -1, drop[1])
            os.chmod(root, root.stat().st_mode | 0o050)
    except OSError:
        pass
    return str(root)


CODE = ("lab", "grader")  # of the project: all the worker runs
COURSE = ("assignments", "reference", "release")  # of a course folder: all the worker reads (release: a students' copy's PTX)


def _project_paths(courses: list[str]) -> list[str]:
    """What the worker reads of the project and the courses: their code and course folders,
    not the whole folder (an instructor's submissions or results may be kept there)."""
    paths = [str(PACKAGE_ROOT / name) for name in CODE]
    return paths + [os.path.join(root, name) for root in courses for name in COURSE]


def _course_roots(extra: tuple[str, ...]) -> list[str]:
    roots = [str(PACKAGE_ROOT)]
    chosen = settings.value(settings.COURSE_ROOT)
    if chosen is not None:
        roots.append(str(chosen))
    roots.extend(str(Path(p).resolve()) for p in extra)
    return roots


# What every worker sees and keeps whichever backends there are; each backend's own (its drivers'
# files, device nodes, environment variables and caches) is on its row (grader.backends.registry).
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "alternatives", "localtime",
       "nsswitch.conf")
SYS = ("block", "bus", "class", "dev", "devices")  # hardware topology (hwloc, the drivers)
ENV_KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH")
ENV_PREFIXES = ("LC_", "LAB_", "PYTHON", "OMP_", "OPENBLAS_", "MKL_", "COVERAGE_")
ENV_DROP = ("PYTHONUSERBASE", "PYTHONSTARTUP")


def _device_nodes() -> list[str]:
    """The device files every backend's driver opens (its row's device_nodes) that exist here."""
    import glob

    from grader.backends import registry

    return [path for kind in registry.backends() for pattern in kind.device_nodes
            for path in sorted(glob.glob(pattern))]


def _env_rules() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The prefixes of the variables a sandboxed worker keeps, and the variables it never gets
    (caches: its own): the lab's and Python's, and every backend's (its row's sandbox_env and
    cache_env)."""
    from grader.backends import registry

    rows = registry.backends()
    return (ENV_PREFIXES + tuple(prefix for kind in rows for prefix in kind.sandbox_env),
            ENV_DROP + tuple(name for kind in rows for name in kind.cache_env))


INSTALLED = ("site-packages", "dist-packages")  # where an installed (not editable) lab's packages live


def withheld(path: str, roots: list[str]) -> bool:
    """Whether a folder the worker's Python or libraries ask for is left out of the sandbox: it
    holds a project checkout or a course folder whole (an instructor keeps submissions and
    results there). A Python install folder that holds the lab's installed packages is no such
    folder: it is bound as any other."""
    real = os.path.realpath(path)
    return any(_under(root, [real]) for root in roots if Path(root).name not in INSTALLED)


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _env(env: dict[str, str], cache: str | None) -> dict[str, str]:
    prefixes, dropped = _env_rules()
    kept = {k: v for k, v in env.items()
            if (k in ENV_KEEP or k.startswith(prefixes)) and k not in dropped}
    kept.update({"HOME": "/tmp", "TMPDIR": "/tmp", settings.KERNEL_CACHE.name: cache or "off"})
    return kept


def _identity(drop: tuple[int, int] | None) -> tuple[bytes, bytes]:
    """A minimal /etc/passwd and /etc/group: root, the worker's user, nobody."""
    uid, gid = drop if drop is not None else (os.getuid(), os.getgid())
    users = {0: ("root", 0), 65534: ("nobody", 65534), uid: (_name(uid), gid)}
    passwd = "".join(f"{name}:x:{u}:{g}::/tmp:/usr/sbin/nologin\n" for u, (name, g) in sorted(users.items()))
    groups = {0: "root", 65534: "nogroup", gid: _name(gid, group=True)}
    group = "".join(f"{name}:x:{g}:\n" for g, name in sorted(groups.items()))
    return passwd.encode(), group.encode()


def _name(id_: int, group: bool = False) -> str:
    try:
        if group:
            import grp

            return grp.getgrgid(id_).gr_name
        return pwd.getpwuid(id_).pw_name
    except (KeyError, ImportError):
        return f"u{id_}"


@dataclass
class Launch:
    """How to start one command: argv, env and the descriptors bwrap reads its data from.
    `argv` ends with the command itself: arguments appended to it are the command's.
    `cache_templates`: the folders of its drivers' cache templates (each holding its cache's
    folder: ComputeCache/, kcache/) that a sandboxed worker copies into its own HOME before its
    drivers start (grader.backends.registry.JitCache)."""

    argv: list[str]
    env: dict[str, str]
    info: SandboxInfo
    pass_fds: tuple[int, ...] = ()
    writable: tuple[str, ...] = ()
    _close: list[int] = field(default_factory=list)
    cache_templates: tuple[str, ...] = ()

    def close(self) -> None:
        """Close this side's copies of the data descriptors (after Popen)."""
        for fd in self._close:
            try:
                os.close(fd)
            except OSError:
                pass
        self._close.clear()


def _data_fd(data: bytes) -> int:
    read, write = os.pipe()
    os.write(write, data)  # a few hundred bytes: less than a pipe holds
    os.close(write)
    return read


# Run by the sandbox's interpreter as root, before the worker: become the unprivileged user (no
# capability is left then; bwrap has set no_new_privs), empty the inheritable capabilities too,
# and start the worker (or compute-sanitizer, in front of it).
DROP = ("import ctypes,os,sys;u,g=int(sys.argv[1]),int(sys.argv[2]);os.setgroups([]);os.setresgid(g,g,g);"
        "os.setresuid(u,u,u);ctypes.CDLL(None).capset((ctypes.c_uint32*2)(0x20080522,0),(ctypes.c_uint32*6)());"
        "os.execv(sys.argv[3],sys.argv[3:])")


# setpriv (util-linux, under /usr, which the sandbox sees) does what DROP does without a second
# interpreter start (about 8 ms here), and empties the capability bounding set too.
SETPRIV_PLACES = ("/usr/bin/setpriv", "/bin/setpriv")


def _drop_argv(uid: int, gid: int) -> list[str]:
    """The command that becomes the unprivileged user, with no capability left, then runs what
    follows it: setpriv where the system has it, else a few lines of Python (DROP)."""
    setpriv = next((p for p in SETPRIV_PLACES if os.access(p, os.X_OK)), None)
    if setpriv is not None:
        return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                "--ambient-caps=-all", "--bounding-set=-all", "--"]
    return [sys.executable, "-I", "-S", "-c", DROP, str(uid), str(gid)]


def _argv(plan: _Plan, command: list[str], env: dict[str, str], courses: tuple[str, ...],
          writable: tuple[str, ...], read_only: tuple[str, ...] = ()) -> Launch:
    cache = _kernel_cache(plan.drop)
    avoid = _home_ancestors()
    binds: list[tuple[str, str]] = []  # (option, path), bound at the same path inside

    def add(option: str, path: str) -> None:
        path = os.path.realpath(path) if option != "--dev-bind-try" else os.path.abspath(path)
        if path not in avoid and (option in ("--ro-bind", "--bind") or os.path.exists(path)):
            binds.append((option, path))

    add("--ro-bind", "/usr")
    roots = _course_roots(courses)
    for path in _python_paths() + _ld_paths() + _backend_paths():
        if not withheld(path, roots):
            add("--ro-bind-try", path)
    for path in _project_paths(roots) + list(read_only):
        add("--ro-bind-try", path)
    if cache is not None:
        add("--ro-bind-try", cache)
    for name in ETC:
        add("--ro-bind-try", f"/etc/{name}")
    for name in SYS:
        add("--ro-bind-try", f"/sys/{name}")
    for path in _device_nodes():
        add("--dev-bind-try", path)
    for path in writable:
        add("--bind", path)
        if plan.drop is not None:
            os.chown(path, *plan.drop)
    # The parents first (a path bound inside another comes after it); then no path twice, and
    # no read-only path inside another read-only one.
    binds.sort(key=lambda b: (b[1].count("/"), b[1]))
    kept: list[tuple[str, str]] = []
    for option, path in binds:
        if any(p == path for _, p in kept):
            continue
        if option.startswith("--ro") and _under(path, [p for o, p in kept if o.startswith("--ro")]):
            continue
        kept.append((option, path))

    args = [plan.bwrap]
    if plan.drop is not None or os.geteuid() == 0:
        # Root: bwrap needs no user namespace; the worker sheds root itself (below).
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if plan.drop is not None:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(TMP_SIZE), "--tmpfs", "/tmp"]
    # Folders bwrap would make on the way to a bound path are private (0700) to root: make
    # them readable, so that a worker that is not root can reach what is bound below them.
    covered = [p for _, p in kept] + ["/proc", "/dev"]
    parents = {str(parent) for _, path in kept for parent in Path(path).parents}
    for parent in sorted(parents - {"/"}, key=lambda p: (p.count("/"), p)):
        if not _under(parent, covered) and not os.path.islink(parent):
            args += ["--perms", "0755", "--dir", parent]
    for option, path in kept:
        args += [option, path, path]
    passwd, group = _identity(plan.drop)
    fds = [_data_fd(passwd), _data_fd(group)]
    seccomp = seccomp_filter()
    if seccomp is not None:
        fds.append(_data_fd(seccomp))
        args += ["--seccomp", str(fds[-1])]
    args += ["--perms", "0644", "--ro-bind-data", str(fds[0]), "/etc/passwd",
             "--perms", "0644", "--ro-bind-data", str(fds[1]), "/etc/group",
             "--chdir", str(PACKAGE_ROOT), "--"]
    if plan.drop is not None:
        args += _drop_argv(*plan.drop)
    args += command
    return Launch(args, _env(env, cache), SandboxInfo(True, plan.user), tuple(fds),
                  tuple(writable), list(fds))


# -- a seccomp filter: a few system calls the worker never needs ------------------------------
# Kernel interfaces that sandboxed code has used to attack the kernel, none of which Python,
# PoCL, the CUDA driver or nvcc need: new namespaces (unshare, and clone with a namespace
# flag: a user namespace reopens much of the kernel to an unprivileged user), the key store,
# eBPF, perf events, userfaultfd and io_uring. clone3 answers ENOSYS (its flags cannot be
# inspected; the C library then uses clone), as in Flatpak.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_DENIED = {  # name: (x86_64, aarch64)
    "unshare": (272, 97), "setns": (308, 268), "keyctl": (250, 219), "add_key": (248, 217),
    "request_key": (249, 218), "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
}
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE3 = 435
_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_X32 = 0x40000000  # x86_64's x32 system calls: the same calls by other numbers


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter as a classic BPF program (what bwrap --seccomp reads), or None on a machine
    this table does not know."""
    import platform
    import struct

    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    index = 0 if machine == "x86_64" else 1
    LD, JEQ, JSET, JGE, RET = 0x20, 0x15, 0x45, 0x35, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, ..., RET|K
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    EPERM, ENOSYS = 1, 38
    program: list[tuple[int, int, int, int]] = []  # (code, jt, jf, k)
    deny_at: list[int] = []  # jumps to patch to the final "deny" instruction

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> int:
        program.append((code, jt, jf, k))
        return len(program) - 1

    op(LD, 4)  # seccomp_data.arch
    op(JEQ, _AUDIT_ARCH[machine], 1, 0)
    op(RET, ERRNO | EPERM)  # another architecture's system calls (i386 on x86_64)
    op(LD, 0)  # seccomp_data.nr
    if machine == "x86_64":
        deny_at.append(op(JGE, _X32))
    for numbers in _DENIED.values():
        deny_at.append(op(JEQ, numbers[index]))
    op(JEQ, _CLONE3, 0, 1)
    op(RET, ERRNO | ENOSYS)
    op(JEQ, _CLONE[machine], 0, 3)
    op(LD, 16)  # clone's flags (the low half of its first argument)
    deny_at.append(op(JSET, _NAMESPACE_FLAGS))
    op(RET, ALLOW)
    op(RET, ALLOW)
    deny = op(RET, ERRNO | EPERM)
    for at in deny_at:
        code, _, jf, k = program[at]
        program[at] = (code, deny - at - 1, jf, k)
    return b"".join(struct.pack("=HBBI", *ins) for ins in program)


# -- can it be set up here? -----------------------------------------------------------------

def _bwrap_version(bwrap: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def _trial(plan: _Plan) -> str:
    """Start the interpreter in the sandbox as the worker will be started, reading a file of
    the project: '' where that works, else what went wrong (bwrap's or Python's first line)."""
    probe = [sys.executable, "-S", "-c", "import sys; open(sys.argv[1], 'rb').close()",
             str(PACKAGE_ROOT / "grader" / "worker.py")]
    launch = _argv(plan, probe, dict(os.environ), (), ())
    try:
        done = subprocess.run(launch.argv, env=launch.env, pass_fds=launch.pass_fds, capture_output=True,
                              text=True, timeout=TRIAL_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    finally:
        launch.close()
    if done.returncode == 0:
        return ""
    lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit code {done.returncode}").strip()


def _user() -> tuple[int, int, str]:
    wanted = settings.value(settings.SANDBOX_USER)
    try:
        entry = pwd.getpwuid(int(wanted)) if wanted.isdigit() else pwd.getpwnam(wanted)
        return entry.pw_uid, entry.pw_gid, entry.pw_name
    except (KeyError, ValueError):
        if wanted.isdigit():
            return int(wanted), int(wanted), wanted
        raise LookupError(f"{settings.SANDBOX_USER.name}={wanted}: no such user") from None


_lock = threading.Lock()

# -- a trial that worked is remembered -------------------------------------------------------
# The trial (bwrap, the drop, an interpreter start) costs 25-50 ms, once per `lab grade`. A trial
# that worked is remembered in a file named by everything it depended on (bwrap, setpriv, the
# interpreter, this module, the project, the user, the kernel), so the next process skips it. If a
# remembered sandbox ever fails to start a worker, the memory is dropped (forget_trial) and that
# grading is a grader error, never the student's verdict. With the kernel cache off, nothing is
# remembered: every process runs the trial.


def _stamp(path: str | Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_mode, st.st_uid]


def _trial_file(plan: _Plan) -> Path | None:
    """Where a worked trial of `plan` is remembered; None where it is not (the kernel cache is off)."""
    import hashlib

    from grader.backends import kernel_cache  # standard library only

    root = kernel_cache.cache_root()
    if root is None:
        return None
    facts = [plan.bwrap, _stamp(plan.bwrap), plan.drop, plan.user, os.geteuid(), os.getuid(),
             sys.executable, _stamp(sys.executable), sys.version, os.uname().release,
             [(p, _stamp(p)) for p in SETPRIV_PLACES], _stamp(__file__), str(PACKAGE_ROOT),
             _stamp(PACKAGE_ROOT), _stamp(PACKAGE_ROOT / "grader" / "worker.py")]
    name = hashlib.sha256(repr(facts).encode()).hexdigest()[:32]
    return root.expanduser().parent / "sandbox-trials" / name


def _trial_remembered(plan: _Plan) -> bool:
    path = _trial_file(plan)
    if path is None:
        return False
    try:
        st = path.lstat()
        folder = path.parent.lstat()
    except OSError:
        return False
    mine = st.st_uid == folder.st_uid == os.geteuid()
    return mine and not (folder.st_mode & 0o022) and path.is_file() and not path.is_symlink()


def _remember_trial(plan: _Plan) -> None:
    path = _trial_file(plan)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.close(fd)
    except OSError:
        pass  # not remembered: the next process runs the trial again


def forget_trial() -> None:
    """A sandboxed worker failed to start: run the trial again next time (here, too)."""
    with _lock:
        try:
            plan = _decide(*_decision_inputs())
        except SandboxUnavailable:
            plan = None
        _decide.cache_clear()
    if isinstance(plan, _Plan):
        path = _trial_file(plan)
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass


INSTALL_HINT = "install bubblewrap: `sudo apt-get install bubblewrap` on Debian or Ubuntu"


def _bwrap_binary(setting: str, path: str) -> str | None:
    """The bwrap to run: LAB_BWRAP where set (a path, or a name looked up on PATH), else `bwrap`
    on PATH; None where none is found. Raises SandboxUnavailable where LAB_BWRAP is set and names
    no executable file: a mistyped setting is an error, never a silent fall back to no sandbox."""
    if not setting.strip():
        return shutil.which("bwrap", path=path or None)
    found = setting if os.sep in setting else shutil.which(setting, path=path or None)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise SandboxUnavailable(f"{settings.BWRAP.name}={setting}: no such executable file; point it at the "
                                 f"bwrap binary, or unset it to use the bwrap on PATH")
    return found


def _decision_inputs() -> tuple[str, str, str, str, int]:
    """What _decide depends on, read now: the mode, LAB_BWRAP, LAB_SANDBOX_USER, PATH, the euid.
    Raises SandboxUnavailable for a LAB_SANDBOX it cannot use."""
    return (mode(), settings.value(settings.BWRAP), settings.value(settings.SANDBOX_USER),
            os.environ.get("PATH", ""), os.geteuid())


@functools.lru_cache(maxsize=8)
def _decide(mode_: str, bwrap_setting: str, user_setting: str, path: str, euid: int) -> _Plan | str:
    """The sandbox this process uses, or why there is none (decided once per setting)."""
    if mode_ == "off":
        return OFF
    if not sys.platform.startswith("linux"):
        return f"the sandbox (bubblewrap) needs Linux, not {sys.platform}"
    bwrap = _bwrap_binary(bwrap_setting, path)
    if bwrap is None:
        return f"bwrap was not found ({INSTALL_HINT}, or set {settings.BWRAP.name} to its binary)"
    if euid == 0:
        try:
            uid, gid, name = _user()
        except LookupError as error:
            return str(error)
        if uid == 0:
            return f"{settings.SANDBOX_USER.name} is root: the worker must run as an unprivileged user"
        plan = _Plan(bwrap, (uid, gid), name)
    else:
        plan = _Plan(bwrap, None, _name(os.getuid()))
    if _trial_remembered(plan):  # this very setup worked before (see _trial_file)
        return plan
    version = _bwrap_version(bwrap)
    if version is None:
        return f"{bwrap} --version failed"
    if version[:2] < MIN_BWRAP:
        return (f"bubblewrap {'.'.join(map(str, MIN_BWRAP))} or newer is needed ({bwrap} is "
                f"{'.'.join(map(str, version))})")
    problem = _trial(plan)
    if not problem:
        _remember_trial(plan)
        return plan
    if plan.drop is not None:
        return (f"the worker cannot start as {plan.user} in the sandbox ({problem}): the Python "
                f"installation, the project and the course must be readable by {plan.user} "
                f"(or set {settings.SANDBOX_USER.name})")
    return f"bwrap could not set up the sandbox ({problem})"


def decide() -> _Plan | str:
    with _lock:
        return _decide(*_decision_inputs())


_said: set[str] = set()


def _say_once(reason: str) -> None:
    with _lock:
        if reason in _said:
            return
        _said.add(reason)
    print(f"note: grading without a sandbox: {reason}", file=sys.stderr, flush=True)


def problem() -> str | None:
    """Why grading must refuse here (LAB_SANDBOX=require and no sandbox), or None."""
    try:
        plan = decide()
    except SandboxUnavailable as error:
        return str(error)
    if isinstance(plan, str) and mode() == "require":
        return f"{settings.SANDBOX.name}=require, and the sandbox cannot be set up: {plan}"
    return None


def check() -> None:
    """Decide now: raise SandboxUnavailable where grading must refuse; otherwise, where there is
    no sandbox, say so (once)."""
    refusal = problem()
    if refusal is not None:
        raise SandboxUnavailable(refusal)
    plan = decide()
    if isinstance(plan, str) and plan != OFF:
        _say_once(plan)


def wrap(command: list[str], env: dict[str, str], *, courses: tuple[str, ...] = (),
         writable: tuple[str, ...] = (), backend: BackendKind | None = None) -> Launch:
    """How to start `command` (the worker, behind compute-sanitizer where asked) in the sandbox;
    unchanged, with a note once, where there is none. Raises SandboxUnavailable where one is
    required. `courses`: course folders to see read-only besides the project's; `writable`:
    folders to see read-write (compute-sanitizer's log); `backend`: the row of the backend the
    command grades on, whose drivers' cache templates it may be given (its jit_caches;
    Launch.cache_templates); None: none."""
    refusal = problem()
    if refusal is not None:
        raise SandboxUnavailable(refusal)
    plan = decide()
    if isinstance(plan, str):
        if plan != OFF:
            _say_once(plan)
        return Launch(list(command), dict(env), SandboxInfo(False, reason=plan))
    caches = backend.jit_caches if backend is not None else ()
    templates = tuple(t for t in (_jit_template(plan, env, cache) for cache in caches) if t)
    launch = _argv(plan, command, env, courses, writable, templates)
    launch.cache_templates = templates
    return launch


# -- a driver's JIT cache ----------------------------------------------------------------------
# Some drivers compile kernels of their own each time they make a context (NVIDIA's OpenCL: 0.13 s
# on an H100) and keep them in a JIT cache (the backend's row's JitCache). A worker's cache is its
# own (in its /tmp: shared and writable, a worker could plant machine code that later gradings
# run), so it starts from a copy of a template made once per driver version by a sandboxed
# process that runs no student code (the row's warmup: NVIDIA's makes a context on each device).
_jit_templates: dict[tuple[str, str], str | None] = {}  # (the templates' folder, driver version) -> template


def _jit_template(plan: _Plan, env: dict[str, str], cache: JitCache) -> str | None:
    """The template's folder (holding the cache's own folder, named as cache.home's last part:
    ComputeCache/), made here the first time; None where the cache's driver is not here or the
    template could not be made."""
    version = cache.driver_version()
    if version is None:
        return None
    held = Path(cache.home).name
    folder = settings.value(settings.XDG_CACHE_HOME) / "gpu-teaching-lab" / cache.folder / version
    if (folder / held).is_dir():
        return str(folder)
    key = (cache.folder, version)
    with _jit_lock:
        if key in _jit_templates:
            return _jit_templates[key]
        _jit_templates[key] = None
        build = None
        try:
            import tempfile

            folder.parent.mkdir(parents=True, exist_ok=True)
            build = Path(tempfile.mkdtemp(prefix=".making-", dir=folder.parent))
            launch = _argv(plan, [sys.executable, "-c", cache.warmup], env, (), (str(build),))
            launch.env[cache.env] = str(build / held)
            try:
                done = subprocess.run(launch.argv, env=launch.env, pass_fds=launch.pass_fds, capture_output=True,
                                      timeout=120, stdin=subprocess.DEVNULL)
            finally:
                launch.close()
            if done.returncode != 0 or not (build / held).is_dir():
                return None
            for root, _dirs, files in os.walk(build):  # the grader's again, readable, not writable
                for name in [root, *(os.path.join(root, f) for f in files)]:
                    if plan.drop is not None:
                        os.chown(name, os.getuid(), os.getgid())
                    os.chmod(name, 0o755 if os.path.isdir(name) else 0o644)
            try:
                os.rename(build, folder)
            except OSError:  # another process made it first
                pass
            if (folder / held).is_dir():
                _jit_templates[key] = str(folder)
        except (OSError, subprocess.SubprocessError):
            return None
        finally:
            if build is not None and build.exists():
                shutil.rmtree(build, ignore_errors=True)
        return _jit_templates[key]


_jit_lock = threading.Lock()


def sees(launch_courses: tuple[str, ...], path: str) -> bool:
    """Whether a worker given `launch_courses` sees the course at `path`."""
    return _under(str(Path(path).resolve()), _course_roots(launch_courses))


def exit_status(info: SandboxInfo, returncode: int) -> int:
    """The worker's own exit status: bwrap reports a child killed by signal N as 128 + N."""
    if info.sandboxed and returncode > 128:
        return -(returncode - 128)
    return returncode


def cache_group() -> int | None:
    """The group a trusted-cache entry written by the parent is given, so a worker that sheds
    root can read it (mode 0640); None where the worker runs as the grader's own user."""
    try:
        plan = decide() if mode() != "off" else None
    except SandboxUnavailable:  # a wrong setting: grading refuses before any entry is written
        return None
    if isinstance(plan, _Plan) and plan.drop is not None:
        return plan.drop[1]
    return None
