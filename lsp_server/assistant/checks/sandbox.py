"""The box a check (`verifyCommand`) runs in: a copy of the folder, and the command's isolation.

`copy_folder` copies what the check needs and nothing that leads out: links that stay inside the
folder stay links (pointing into the copy), links that leave it and loops are left out, and so are
FIFOs, sockets and devices; the caller tells the check what was left out. The copy is refused past
COPY_MAX_FILES entries or COPY_MAX_BYTES.

`CheckSandbox.run` runs the command in the copy. With `verifySandbox` "auto" it runs under bubblewrap
(`bwrap`, Flatpak's sandbox), in a filesystem built from nothing, as Flatpak builds one: the system's
read-only trees (/usr, /etc and the links or folders of / that lead into /usr), the Python
installations and virtual environments the check may use and the install prefixes of the tools on
PATH (read-only), the copy (the only writable folder besides a fresh /tmp), a fresh /dev and /proc.
No home directory, no /run, /var, /srv, /opt or /mnt: a read-only bind does not stop `connect()` on a
UNIX socket, so a check reaches a socket only if it is in a bound tree: /etc and the trees bound besides
the system's are scanned for sockets once per process (_sockets_in), and each found is covered. /usr
is not scanned (the filesystem hierarchy puts sockets in /run, /tmp and /var, and a scan of /usr takes
seconds): a socket there would be reachable. Its own network (a loopback device only), pid, IPC and UTS
namespaces, a scrubbed environment, and resource limits (CPU time, file size, data memory,
processes). Its pid namespace dies with its first process, so nothing the check started outlives it.
Where bubblewrap is missing or cannot set up its namespaces, nothing runs: SandboxUnavailable says why
and how to fix it. With "none" the command runs as the user, with the same limits but processes.

Either way the command runs under a supervisor (_SUPERVISOR) that is a child subreaper: a process the
command starts that leaves its process group or session (`setsid`, a double fork) still has the
supervisor as an ancestor, which ends every process under it when the command ends, times out or is
cancelled. And either way the bytes the check writes in its copy (and, without the sandbox, in its
temporary folders) are counted while it runs: past WRITE_LIMIT it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..tools.workspace_files import SKIPPED_DIRS

SandboxMode = Literal["auto", "none"]

COPY_MAX_FILES = 20_000
COPY_MAX_BYTES = 512 * 1024 * 1024
# Besides SKIPPED_DIRS (.git, node_modules, .venv, ...): environments and caches that are not the code.
NOT_COPIED = SKIPPED_DIRS | {"venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
# The workspace's own virtual environments: not copied, but bound read-only at the same place in the
# copy (and where they are), so that `.venv/bin/python -m pytest` runs in the sandbox.
VENV_NAMES = (".venv", "venv")
LEFT_OUT_SHOWN = 10  # names listed in the note about what was left out; the rest are counted

OUTPUT_HEAD_CHARS = 1_000  # what the command printed first (the command line, collection errors)
OUTPUT_TAIL_CHARS = 3_000  # and last (a test runner's summary)
DRAIN_S = 1.0  # how long output is still read after the command ended and its processes were killed

FILE_SIZE_LIMIT = 512 * 1024 * 1024  # RLIMIT_FSIZE: bytes any one file written may reach
# RLIMIT_DATA: the memory one process of the check may allocate (its heap and private writable
# mappings), half the machine's memory and 8 GiB at most. Not RLIMIT_AS: the JVM, V8 and Go reserve
# address space by the gigabyte without using it, and would not start under it.
DATA_LIMIT = min(8 << 30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
# What the check may add to its copy (and its temporary folders) while it runs; in the sandbox its /tmp
# and /dev/shm are memory of this size at most.
WRITE_LIMIT = 1 << 30
WRITE_POLL_S = 0.25  # how often that is counted: the check may pass it by what it writes meanwhile
# RLIMIT_NPROC: the kernel counts it per user, in the user namespace the limit is set in (Linux 5.14 and
# later), so it is set inside the sandbox's own, where only the check's processes count. It does not
# apply to root, nor without the sandbox (there it would count every process the user runs).
PROCESS_LIMIT = 512
# The variables a test command needs to find its tools and decode text; nothing else is passed on, so
# keys and tokens in the editor's environment never reach code the model wrote.
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
HOME_INSIDE = "/tmp/home"
# The system's read-only trees a check gets, and the entries of / that are links into /usr on a
# merged-/usr system (or folders of their own on an older one).
SYSTEM_TREES = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
TERMINATE_GRACE_S = 2.0  # how long the supervisor has to end what the check started, once told to stop

# Sets the limits and becomes a child subreaper, runs the command with `sh -c`, then ends every process
# left under it (the command's orphans are re-parented to it, not to init), also when told to stop
# (SIGTERM); exits with the command's status. Run by the server's own interpreter, without
# site-packages (-I -S), which the sandbox always has.
_SUPERVISOR = """\
import ctypes, os, resource, signal, sys
names = ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_NPROC")
for name, value in zip(names, map(int, sys.argv[1:5])):
    if value >= 0:
        kind = getattr(resource, name)
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("cannot become a child subreaper: " + os.strerror(ctypes.get_errno()))
me = str(os.getpid()).encode()

def children():
    found = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/" + name + "/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except (OSError, ValueError):
            continue
        if len(fields) > 1 and fields[1] == me:
            found.append(int(name))
    return found

def end_all():
    while kids := children():
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for kid in kids:
            try:
                os.waitpid(kid, 0)
            except ChildProcessError:
                pass

def stop(signum, frame):
    end_all()
    os._exit(128 + signum)

signal.signal(signal.SIGTERM, stop)
command = os.fork()
if command == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp("sh", ["sh", "-c", sys.argv[5]])
    finally:
        os._exit(127)
status = os.waitpid(command, 0)[1]
end_all()
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""

# How a refusal ends: the other way out, and what it costs.
NOT_ISOLATED = (
    'or set `verifySandbox` to "none" to run checks without isolation, as you, with your files and network'
)


class SandboxUnavailable(Exception):
    """verifySandbox is "auto" and bubblewrap cannot run here; the message names the fix."""


class CopyRefused(Exception):
    """The folder is too large, or unreadable, to copy for each check."""


def copy_folder(source: Path, target: Path) -> list[str]:
    """Copies the folder `source` to `target` (a new directory) for a check; returns what was left out,
    each as `path (why)` relative to the folder. Raises CopyRefused past the size limits."""
    root = Path(os.path.realpath(source))
    left_out: list[str] = []
    entries = 0
    size = 0
    target.mkdir()
    pending = [Path()]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(root / relative) as listing:
                found = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            if relative == Path():
                raise CopyRefused(f"cannot read {source}: {exc.strerror}") from exc
            left_out.append(f"{relative.as_posix()}/ (unreadable)")
            continue
        for entry in found:
            if entry.name in NOT_COPIED or entry.name.endswith(".egg-info"):
                continue
            entries += 1
            if entries > COPY_MAX_FILES:
                raise CopyRefused(_too_large(source))
            path = relative / entry.name
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                left_out.append(f"{path.as_posix()} (unreadable)")
                continue
            why = None
            if stat.S_ISDIR(mode):
                (target / path).mkdir()
                pending.append(path)
            elif stat.S_ISLNK(mode):
                link, why = _link_in_copy(root, path)
                if link is not None:
                    os.symlink(link, target / path)
            elif stat.S_ISREG(mode):
                copied = _copy_file(root / path, target / path, COPY_MAX_BYTES - size)
                if copied is None:
                    why = "unreadable, or no longer a file"
                elif copied < 0:
                    raise CopyRefused(_too_large(source))
                else:
                    size += copied
            else:
                why = _special_kind(mode)
            if why is not None:
                left_out.append(f"{path.as_posix()} ({why})")
    return left_out


def left_out_note(left_out: list[str]) -> str:
    """The line a check's output starts with when something was not copied; empty when nothing was."""
    if not left_out:
        return ""
    shown = ", ".join(left_out[:LEFT_OUT_SHOWN])
    more = f", and {len(left_out) - LEFT_OUT_SHOWN} more" if len(left_out) > LEFT_OUT_SHOWN else ""
    return f"[left out of the copy: {shown}{more}]\n"


def _too_large(source: Path) -> str:
    return (
        f"{source} holds more than {COPY_MAX_FILES} files or {COPY_MAX_BYTES >> 20} MB besides version "
        "control, virtual environments, node_modules, build outputs and caches, too much to copy for each "
        "check; open a smaller folder as the workspace to check edits"
    )


def _link_in_copy(root: Path, relative: Path) -> tuple[str | None, str | None]:
    """The target a link gets in the copy (relative, so that it resolves inside the copy), or None and
    why it is left out: it leads out of the folder (at any hop), or loops."""
    link = root / relative
    try:
        resolved = os.path.realpath(link, strict=True)
    except FileNotFoundError:  # dangling: it still must not name a place outside
        resolved = os.path.realpath(link)
    except OSError as exc:
        return None, "a link loop" if exc.errno == errno.ELOOP else "an unreadable link"
    if resolved != str(root) and not resolved.startswith(str(root) + os.sep):
        return None, "a link out of the folder"
    return os.path.relpath(resolved, link.parent), None


def _copy_file(source: Path, target: Path, room: int) -> int | None:
    """Copies one regular file, with its permission bits (owner-writable, so the proposed edit can be
    written over it) and times; returns its size, -1 when it is larger than room, or None when it cannot
    be read or is no longer a regular file (never blocking on a FIFO swapped in)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return None
        if status.st_size > room:
            return -1
        with open(fd, "rb", closefd=False) as reader, open(target, "xb") as writer:
            shutil.copyfileobj(reader, writer)
        os.chmod(target, stat.S_IMODE(status.st_mode) | stat.S_IWUSR)
        os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
        return status.st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


@dataclass(frozen=True)
class Ran:
    """How one run of the command went: exit status 0, and its trimmed output (with a closing note when
    it failed: the exit status, the timeout, or the write limit)."""

    passed: bool
    output: str
    isolation: str  # what it ran under: "bwrap" or "none"
    timed_out: bool = False  # killed at the time limit


# bwrap paths whose sandbox was seen working in this process: the probe runs once per path.
_WORKING: set[str] = set()


class CheckSandbox:
    """Runs check commands under the isolation `mode` asks for: "auto", bubblewrap, or refuses to run
    them where it cannot be set up; "none", no isolation.

    bwrap: the bubblewrap binary; None finds `bwrap` on PATH.
    """

    def __init__(self, mode: SandboxMode = "auto", bwrap: str | None = None) -> None:
        self.mode = mode
        self.bwrap = bwrap

    async def isolation(self) -> str:
        """The isolation checks run under, "bwrap" or "none"; SandboxUnavailable when "auto" finds no
        working bubblewrap."""
        if self.mode == "none":
            return "none"
        bwrap = self._bwrap()
        if bwrap is None:
            raise SandboxUnavailable(
                f"bubblewrap ({self.bwrap or '`bwrap`'}), which isolates checks, is not installed: install "
                "it (`apt install bubblewrap`, `dnf install bubblewrap`, `pacman -S bubblewrap`), "
                f"{NOT_ISOLATED}"
            )
        if bwrap not in _WORKING:
            problem = await _probe(bwrap)
            if problem is not None:
                raise SandboxUnavailable(
                    f"bubblewrap cannot set up its sandbox here ({problem}): user namespaces may be "
                    "blocked (Ubuntu 24.04's AppArmor rule, a container's seccomp profile; see the README, "
                    f'"Checking edits"): allow them, {NOT_ISOLATED}'
                )
            _WORKING.add(bwrap)
            # The trees every check gets are scanned for sockets now (a Python installation is a large
            # tree), while the model writes, rather than when the first check waits on it.
            trees = _bound_trees((), os.environ.get("PATH", os.defpath))
            await asyncio.to_thread(_sockets_in, trees)
        return "bwrap"

    def _bwrap(self) -> str | None:
        found = self.bwrap or shutil.which("bwrap")
        return found if found is not None and os.access(found, os.X_OK) else None

    async def run(
        self,
        command: str,
        copy: Path,
        scratch: Path,
        timeout_s: float,
        venvs_of: Path | None = None,
        tail_chars: int = OUTPUT_TAIL_CHARS,
    ) -> Ran:
        """Runs `command` with `sh -c` in `copy` under `isolation()`, at most timeout_s seconds (the
        cancelled task kills it too); every process it started is gone when this returns.

        scratch: the directory that holds `copy`, which the caller removes; without a sandbox the check's
        home and temporary files go there too. venvs_of: the folder whose virtual environments the check
        may use. tail_chars: how much of the end of its output is kept (after OUTPUT_HEAD_CHARS of its
        start).
        """
        isolation = await self.isolation()
        cpu_s = math.ceil(timeout_s) + 1
        venvs = _venvs(venvs_of)
        env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
        # No bytecode: two candidates written within the same second could otherwise share a stale .pyc.
        env.update(PYTHONDONTWRITEBYTECODE="1", CI="1")
        if isolation == "bwrap":
            env.setdefault("PATH", os.defpath)
            env.update(HOME=HOME_INSIDE, TMPDIR="/tmp")
            trees = _bound_trees(venvs.values(), env["PATH"])
            masked = await asyncio.to_thread(_sockets_in, trees)
            supervised = _supervised(command, cpu_s, PROCESS_LIMIT)
            argv = _bwrap_argv(self._bwrap() or "bwrap", copy, venvs, trees, masked, supervised)
        else:
            (scratch / "home").mkdir()
            (scratch / "tmp").mkdir()
            env.update(HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"))
            argv = _supervised(command, cpu_s, -1)
            for name, venv in venvs.items():  # the copy leaves them out: link them back, as they are
                if not (copy / name).exists():
                    (copy / name).symlink_to(venv)
        # bwrap itself starts with the scrubbed environment too: its first process stays in the sandbox
        # as pid 1, and /proc/1/environ would show the server's environment otherwise.
        passed, output, timed_out = await _run(argv, copy, env, timeout_s, tail_chars, scratch)
        return Ran(passed, output, isolation, timed_out)


def _supervised(command: str, cpu_s: int, processes: int) -> list[str]:
    """argv that runs `command` under the supervisor and these limits (-1: that one is left as it is)."""
    limits = [str(cpu_s), str(FILE_SIZE_LIMIT), str(DATA_LIMIT), str(processes)]
    return [sys.executable, "-I", "-S", "-c", _SUPERVISOR, *limits, command]


def _venvs(folder: Path | None) -> dict[str, Path]:
    """The folder's virtual environments (where they really are) by name."""
    if folder is None:
        return {}
    return {name: Path(os.path.realpath(folder / name)) for name in VENV_NAMES if (folder / name).is_dir()}


def _private_roots() -> list[str]:
    """Where tools on PATH are not taken from: home directories (the user's files) and temporary and
    runtime directories (other programs' files and sockets)."""
    candidates = ["/home", "/root", os.path.expanduser("~"), "/tmp", "/var/tmp", "/run", "/var/run"]
    with contextlib.suppress(KeyError):
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted({os.path.realpath(c) for c in candidates if os.path.isdir(c)} - {"/"})


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _interpreters(venvs: Iterable[Path]) -> set[str]:
    """The Python installations a check may need: the server's own (the tests and the eval run checks
    with its interpreter) and the base of each of the workspace's virtual environments, and those."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for venv in venvs:
        with contextlib.suppress(OSError):
            for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    found.add(str(Path(value.strip()).parent))  # home = /prefix/bin
        found.add(str(venv))
    return {os.path.realpath(path) for path in found}


def _tool_prefixes(path_variable: str) -> set[str]:
    """The install prefixes of the folders on PATH outside the system's trees (`/opt/node` for
    `/opt/node/bin`), so that a tool there finds its libraries; none in a private root, nor one that is
    a top-level folder of its own (`/opt` for `/opt/bin`: everything installed there, and more)."""
    private = _private_roots()
    found = set()
    for folder in filter(None, path_variable.split(os.pathsep)):
        real = os.path.realpath(folder)
        prefix = os.path.dirname(real) if os.path.basename(real) in ("bin", "sbin") else real
        if prefix.count("/") >= 2 and os.path.isdir(prefix) and not any(_within(prefix, p) for p in private):
            found.add(prefix)
    return found


def _bound_trees(venvs: Iterable[Path], path_variable: str) -> list[str]:
    """The trees a check gets read-only besides the system's: Python installations, virtual
    environments and tools' prefixes, none inside another or inside a system tree."""
    trees: list[str] = []
    for tree in sorted(_interpreters(venvs) | _tool_prefixes(path_variable)):
        if not any(_within(tree, outer) for outer in (*SYSTEM_TREES, *trees)):
            trees.append(tree)
    return trees


# Sockets found in a tree, by tree: each is scanned once per process (an installation does not grow
# sockets, and scanning one is slow).
_SOCKETS: dict[str, list[str]] = {}


def _sockets_in(trees: Iterable[str]) -> list[str]:
    """The UNIX sockets under the trees a check gets besides /usr, and under /etc: each is covered in
    the sandbox, since a read-only bind does not stop a `connect()`."""
    found: list[str] = []
    for tree in ("/etc", *trees):
        if tree not in _SOCKETS:
            _SOCKETS[tree] = _scan_for_sockets(tree)
        found += _SOCKETS[tree]
    return found


def _scan_for_sockets(tree: str) -> list[str]:
    found = []
    pending = [tree]
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as listing:
            for entry in listing:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                        continue  # the common case, known from the listing alone
                    elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                        found.append(entry.path)
    return found


def _bwrap_argv(
    bwrap: str, copy: Path, venvs: dict[str, Path], trees: list[str], sockets: list[str], command: list[str]
) -> list[str]:
    """A filesystem built from nothing: the system's trees, `trees`, fresh /dev, /proc and /tmp, and
    the copy, writable; the `sockets` found in those trees covered by /dev/null."""
    argv = [bwrap]
    for tree in SYSTEM_TREES:
        argv += ["--ro-bind", tree, tree]
    for entry in SYSTEM_LINKS:
        if os.path.islink(entry):
            argv += ["--symlink", os.readlink(entry), entry]
        elif os.path.isdir(entry):
            argv += ["--ro-bind", entry, entry]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    for scratch in ("/tmp", "/dev/shm"):
        argv += ["--size", str(WRITE_LIMIT), "--tmpfs", scratch]
    argv += ["--symlink", "/tmp", "/var/tmp", "--dir", HOME_INSIDE]
    for tree in trees:
        argv += ["--ro-bind-try", tree, tree]  # a venv's base may be gone: then its python fails
    argv += ["--bind", str(copy), str(copy)]
    for name, venv in venvs.items():
        argv += ["--ro-bind", str(venv), str(copy / name)]
    for found in sockets:  # where it is, and where a venv it is in shows it in the copy
        seen = [found] + [
            str(copy / name / os.path.relpath(found, venv))
            for name, venv in venvs.items()
            if _within(found, str(venv))
        ]
        for path in seen:
            argv += ["--ro-bind-try", os.devnull, path]
    # The root bwrap builds these on is memory: read-only, so that nothing is written there.
    argv += [
        "--remount-ro",
        "/",
        "--chdir",
        str(copy),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--",
        *command,
    ]
    return argv


async def _probe(bwrap: str) -> str | None:
    """None when a sandbox as checks get one runs `true` here; else what bwrap said."""
    with tempfile.TemporaryDirectory(prefix="llama-lsp-probe-") as scratch:
        trees = sorted(_interpreters(()))
        argv = _bwrap_argv(bwrap, Path(scratch), {}, trees, [], _supervised("true", 10, -1))
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                env={"PATH": os.environ.get("PATH", os.defpath)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}"
        try:
            said, _ = await asyncio.wait_for(process.communicate(), 10)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            return "it did not start `true` within 10 s"
    if process.returncode == 0:
        return None
    lines = said.decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {process.returncode}"


async def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float, tail_chars: int, written: Path
) -> tuple[bool, str, bool]:
    """Whether the command passed, its output, and whether it was killed at the time limit. It is
    stopped too once `written` (the folder of its copy) has grown by WRITE_LIMIT."""
    loop = asyncio.get_running_loop()
    transport, watch = await loop.subprocess_exec(
        lambda: _Watch(loop, tail_chars),
        *argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so the kill reaches what it started
    )
    pid = transport.get_pid()
    ending = ""
    try:
        ending = await asyncio.wait_for(_written_past_limit(written, watch.exited), timeout_s)
    except asyncio.TimeoutError:
        ending = "timeout"
    finally:  # it ended, timed out, wrote too much or was cancelled: what it left behind goes too
        if not watch.exited.done():
            # The supervisor ends what the check started, also what left its process group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(watch.exited), TERMINATE_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.shield(watch.exited)
        # What is still buffered; a process that escaped the group may hold the pipe open, so not
        # for long.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(watch.drained), DRAIN_S)
        transport.close()
    text = watch.output.text()
    if ending == "timeout":
        return False, f"{text}\n[killed: the check took longer than {timeout_s:g} s]", True
    if ending == "written":
        return False, f"{text}\n[killed: the check wrote more than {WRITE_LIMIT >> 20} MB]", False
    status = transport.get_returncode()
    if status != 0:
        text += f"\n[exit status {status}]"
    return status == 0, text, False


async def _written_past_limit(folder: Path, exited: asyncio.Future[None]) -> str:
    """ "exited" once the command exits, or "written" once `folder` has grown by WRITE_LIMIT bytes."""
    start = await asyncio.to_thread(_bytes_under, folder)
    interval = WRITE_POLL_S
    while True:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), interval)
            return "exited"
        counting = time.monotonic()
        if await asyncio.to_thread(_bytes_under, folder) - start > WRITE_LIMIT:
            return "written"
        # A large copy takes a while to count: at most a tenth of a core goes to it.
        interval = max(WRITE_POLL_S, 10 * (time.monotonic() - counting))


def _bytes_under(folder: Path) -> int:
    """The disk space the files under folder take (links not followed)."""
    total = 0
    pending = [str(folder)]
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as listing:
            for entry in listing:
                with contextlib.suppress(OSError):
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
    return total


class _Watch(asyncio.SubprocessProtocol):
    """Collects the command's output, and says when it exited (even while a child it left behind
    still holds its output open) and when its output closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, tail_chars: int) -> None:
        self.output = _BoundedOutput(tail_chars)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.output.add(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _BoundedOutput:
    """Keeps the head and the tail of what a command prints, however much it prints."""

    def __init__(self, tail_chars: int = OUTPUT_TAIL_CHARS) -> None:
        self.head = b""
        self.tail = b""
        self.dropped = 0
        self.tail_chars = tail_chars

    def add(self, chunk: bytes) -> None:
        room = OUTPUT_HEAD_CHARS - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.tail_chars:
            self.dropped += len(self.tail) - self.tail_chars
            self.tail = self.tail[-self.tail_chars :]

    def text(self) -> str:
        return _joined(self.head.decode(errors="replace"), self.dropped, self.tail.decode(errors="replace"))


def trimmed(output: str) -> str:
    """A command's output as a check shows it, however much of it was kept (`tail_chars`): its first
    OUTPUT_HEAD_CHARS and last OUTPUT_TAIL_CHARS characters."""
    if len(output) <= OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS:
        return output
    left_out = len(output[OUTPUT_HEAD_CHARS:-OUTPUT_TAIL_CHARS].encode())
    return _joined(output[:OUTPUT_HEAD_CHARS], left_out, output[-OUTPUT_TAIL_CHARS:])


def _joined(head: str, left_out: int, tail: str) -> str:
    middle = f"\n[... {left_out} bytes left out ...]\n" if left_out else ""
    return head + middle + tail
