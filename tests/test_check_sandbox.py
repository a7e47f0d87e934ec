"""The box a check runs in (lsp_server.assistant.checks.sandbox), driven through the Verifier with real
processes and no model: a hostile check cannot change a file outside its copy, see the server's
environment, reach the network or another program's socket, allocate or write past its limits, or leave
a process behind (also without the sandbox); special files are left out of the copy;
without a sandbox, the check is refused unless `verifySandbox` is "none".
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.assistant import actions
from lsp_server.assistant.checks import sandbox as check_sandbox
from lsp_server.assistant.checks.sandbox import CheckSandbox, SandboxMode
from lsp_server.assistant.checks.verifier import Verifier
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles

from .test_verify import MODULE, TEST, processes_running

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2-llama-lsp"
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the `home` fixture moves $HOME, not this
ESCAPES = (REAL_HOME, Path("/root"), Path("/tmp"), Path("/etc"), Path("/usr"))
FIXED = MODULE.replace("a - b", "a + b")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp and the home directories (the sandbox has none of
    them)."""
    (ROOT / "build").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="check-sandbox-", dir=ROOT / "build"))
    (folder / "target.txt").write_text("outside\n")
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory for the test, with a file a link in the workspace points to."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / ".bashrc").write_text("home\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, outside: Path, home: Path) -> Iterator[Path]:
    """A workspace with every kind of link and special file a copy must deal with."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(MODULE)
    (root / "test_calc.py").write_text(TEST)
    (root / "sub").mkdir()
    (root / "sub" / "inside.txt").write_text("inside\n")
    (root / "alias").symlink_to("sub/inside.txt")  # relative, inside
    (root / "absolute_alias").symlink_to(root / "sub" / "inside.txt")  # absolute, inside
    (root / "rc").symlink_to(home / ".bashrc")  # absolute, outside
    (root / "target").symlink_to(outside / "target.txt")
    (root / "up").symlink_to("..")  # the folder's parent
    (root / "loop").symlink_to("loop")
    os.mkfifo(root / "pipe")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock"))
    listener.listen()
    yield root
    listener.close()


def snapshot(*folders: Path) -> dict[str, str]:
    """Every regular file's text under folders (links not followed)."""
    return {
        str(path): path.read_text()
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


class Listener:
    """A TCP server on the host's loopback that counts the connections it gets."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


def hostile_command(project: Path, outside: Path, home: Path, port: int, marker: str) -> str:
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    return "\n".join(
        [
            "echo pwned >> rc",  # through the links that lead out
            "echo pwned >> target",
            "echo pwned >> up/project/calc.py",
            "echo pwned >> up/home/.bashrc",
            "echo pwned >> loop",
            "echo copied >> alias",  # a link inside the folder: the copy's file
            "echo copied >> absolute_alias",
            "echo link=$(readlink absolute_alias)",
            f"echo pwned >> {outside}/target.txt",  # absolute paths outside the copy
            f"echo pwned >> {home}/.bashrc",
            f"echo pwned >> {project}/calc.py",
            f"touch {' '.join(str(escape / marker) for escape in ESCAPES)}",
            "echo pwned > $HOME/x",  # the check's own home: allowed, inside the sandbox
            "env; cat /proc/$PPID/environ; cat /proc/1/environ",
            "tr '\\0' '\\n' < /proc/self/environ",
            f'{sys.executable} -c "{connect}" || echo no network',
            "(sleep 1000.11 &)",  # children that would outlive the check
            "setsid sleep 1000.12 > /dev/null 2>&1 &",
            "true",
        ]
    )


def no_check_processes_within(seconds: float, *sleeps: str) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for sleep in sleeps for pid in processes_running("sleep", sleep)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def proposed(project: Path) -> ToolRunner:
    runner = ToolRunner(WorkspaceFiles([project]))
    assert runner.proposals.propose_text(project / "calc.py", FIXED) is None
    return runner


async def test_a_hostile_check_stays_in_its_box(
    project: Path, outside: Path, home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("LLAMA_LSP_TEST_SECRET", SECRET)
    marker = f"llama-lsp-check-escaped-{os.getpid()}"
    before = snapshot(project, outside, home)
    listener = Listener()
    try:
        command = hostile_command(project, outside, home, listener.port, marker)
        check = Verifier(command, 30, 3, WorkspaceFiles([project]), CheckSandbox("auto"))
        runner = proposed(project)
        problem = await check.check_latest(runner)
        left = no_check_processes_within(1.0, "1000.11", "1000.12")
    finally:
        listener.close()
        for escape in ESCAPES:
            (escape / marker).unlink(missing_ok=True)
    output = check.verification.output
    # The check itself completed, and says what the copy left out.
    assert problem is None, output
    assert check.verification.sandbox == "bwrap" and check.verification.to_json()["sandbox"] == "bwrap"
    note = output.splitlines()[0]
    for left_out in (
        "rc (a link out of the folder)",
        "target (a link out of the folder)",
        "up (a link out of the folder)",
        "loop (a link loop)",
        "pipe (a FIFO)",
        "sock (a socket)",
    ):
        assert left_out in note, note
    assert "alias" not in note and "calc.py" not in note
    # Links inside the folder stayed links, into the copy.
    assert "link=sub/inside.txt" in output
    # Nothing outside the copy changed, and nothing escaped into the places it tried.
    assert snapshot(project, outside, home) == before
    for escape in ESCAPES:
        assert not (escape / marker).exists(), escape
    assert "Read-only file system" in output  # /etc, /usr and the outside folder: there, read-only
    # No secret, no network, no process left.
    assert SECRET not in output and "LLAMA_LSP_TEST_SECRET" not in output
    assert "no network" in output and listener.connections == 0
    assert left == []


SPAWNS = (
    "(sleep 1000.21 &)",  # a background child of a subshell
    "setsid sleep 1000.22 > /dev/null 2>&1 &",  # a new session: out of the process group
    "(setsid sh -c 'sleep 1000.23 & exit' > /dev/null 2>&1 &)",  # a double fork into a new session
)


@pytest.mark.parametrize("mode", ["auto", "none"])
@pytest.mark.parametrize("ending", ["pass", "fail", "timeout", "cancel"])
async def test_no_process_of_the_check_outlives_it(project: Path, mode: SandboxMode, ending: str):
    """With the sandbox or without it (`verifySandbox` "none": the supervisor, a child subreaper)."""
    last = {"pass": "true", "fail": "false", "timeout": "sleep 60", "cancel": "sleep 60"}[ending]
    command = "\n".join([*SPAWNS, last])
    check = Verifier(
        command, 2 if ending == "timeout" else 30, 3, WorkspaceFiles([project]), CheckSandbox(mode)
    )
    task = asyncio.ensure_future(check.check_latest(proposed(project)))
    if ending == "cancel":
        deadline = time.monotonic() + 10
        while not processes_running("sleep", "1000.23") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert processes_running("sleep", "1000.23"), "the check never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        problem = await task
        assert (problem is None) == (ending == "pass"), check.verification.output
        assert check.verification.sandbox == ("bwrap" if mode == "auto" else "none")
    assert no_check_processes_within(1.0, "1000.21", "1000.22", "1000.23") == []


async def test_the_check_runs_under_limits(project: Path):
    check = Verifier("cat /proc/self/limits; false", 10, 3, WorkspaceFiles([project]))
    await check.check_latest(proposed(project))
    limits = {line[:26].strip(): line[26:].split() for line in check.verification.output.splitlines()}
    assert limits["Max cpu time"][:2] == ["11", "11"]  # the timeout, and a second
    assert limits["Max file size"][:2] == [str(check_sandbox.FILE_SIZE_LIMIT)] * 2
    assert limits["Max processes"][:2] == [str(check_sandbox.PROCESS_LIMIT)] * 2  # (root: not enforced)


async def test_a_file_past_the_size_limit_fails_the_check(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(check_sandbox, "FILE_SIZE_LIMIT", 1 << 20)
    check = Verifier("head -c 2000000 /dev/zero > big && echo wrote it", 10, 3, WorkspaceFiles([project]))
    problem = await check.check_latest(proposed(project))
    assert problem is not None and "wrote it" not in check.verification.output


async def test_a_folder_past_the_copy_limit_is_not_copied(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(check_sandbox, "COPY_MAX_BYTES", 100)
    (project / "data.bin").write_bytes(b"x" * 200)
    check = Verifier("echo ran", 10, 3, WorkspaceFiles([project]))
    problem = await check.check_latest(proposed(project))
    assert problem is not None and "ran" not in check.verification.output
    assert "could not copy the folder" in problem and "too much to copy" in problem


def missing_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CheckSandbox:
    """An injected bwrap path where there is none."""
    return CheckSandbox("auto", bwrap=str(tmp_path / "no-such-bwrap"))


def bwrap_off_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CheckSandbox:
    """A PATH without bwrap."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(tools))
    return CheckSandbox("auto")


def bwrap_without_namespaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CheckSandbox:
    """A bubblewrap that cannot create namespaces, as under Ubuntu 24.04's AppArmor rule."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return CheckSandbox("auto", bwrap=str(fake))


@pytest.mark.parametrize("unavailable", [missing_bwrap, bwrap_off_path, bwrap_without_namespaces])
async def test_without_a_sandbox_the_check_is_refused_and_says_how_to_fix_it(
    project: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unavailable
):
    ran = outside / "ran"
    fix = actions.BY_NAME["fix"].check_policy()
    check = Verifier(
        f"touch {ran}", 30, 3, WorkspaceFiles([project]), unavailable(tmp_path, monkeypatch), fix
    )
    check.look_before(project / "calc.py")
    runner = proposed(project)
    assert await check.check_latest(runner) is None  # the edit stays, unchecked
    assert await check.result_before() is None
    assert not ran.exists()
    assert len(runner.proposals.edits) == 1
    result = check.verification.to_json()
    assert result["passed"] is None and result["attempts"] == 0 and result["sandbox"] is None
    assert result["passedBefore"] is None
    summary = result["summary"]
    assert summary.startswith("not verified: the check did not run: bubblewrap")
    assert '`verifySandbox` to "none"' in summary and result["output"] in summary
    if unavailable is bwrap_without_namespaces:
        assert "Permission denied" in summary and "user namespaces" in summary
    else:
        assert "apt install bubblewrap" in summary


async def test_with_verify_sandbox_none_the_check_runs_without_isolation(
    project: Path, outside: Path, home: Path, tmp_path: Path
):
    """What the user chose: the command runs as them (it reaches an absolute path), but still on a copy
    without the links that lead out, and its process group ends with it."""
    before = snapshot(project, home)
    command = (
        f"echo pwned >> rc; echo pwned >> up/project/calc.py; echo ran > {outside}/ran; "
        "(sleep 1000.31 &); true"
    )
    check = Verifier(
        command, 30, 3, WorkspaceFiles([project]), CheckSandbox("none", bwrap=str(tmp_path / "nothing"))
    )
    assert await check.check_latest(proposed(project)) is None, check.verification.output
    assert check.verification.to_json()["sandbox"] == "none"
    assert (outside / "ran").read_text() == "ran\n"
    assert snapshot(project, home) == before
    assert "pipe (a FIFO)" in check.verification.output
    assert no_check_processes_within(1.0, "1000.31") == []


@pytest.mark.parametrize("name", [".venv", "venv"])
async def test_the_workspaces_virtual_environment_runs_in_the_sandbox(tmp_path: Path, name: str):
    """Not copied, but there read-only: in the copy, where it is, and the Python it was made from."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text(MODULE)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / name)], check=True)
    show = "-c 'import sys; print(\"prefix\", sys.prefix)'"
    command = f"{name}/bin/python {show} && {project}/{name}/bin/python {show} && ! touch {name}/new"
    check = Verifier(command, 30, 3, WorkspaceFiles([project]))
    assert await check.check_latest(proposed(project)) is None, check.verification.output
    prefixes = [
        line.split()[1] for line in check.verification.output.splitlines() if line.startswith("prefix")
    ]
    assert prefixes[1] == str(project / name) and prefixes[0].endswith(f"/copy/project/{name}")
    assert not (project / name / "new").exists()


CONNECT = """\
import socket, sys
for path in sys.argv[1:]:
    try:
        socket.socket(socket.AF_UNIX).connect(path)
        print("reached", path)
    except OSError as exc:
        print("not reached", path, exc.strerror)
"""


class UnixListeners:
    """Listening UNIX sockets at `paths`, each able to tell whether anything connected to it."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.sockets = []
        for path in paths:
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(str(path))
            listener.listen()
            listener.setblocking(False)
            self.sockets.append(listener)

    def reached(self) -> list[Path]:
        found = []
        for path, listener in zip(self.paths, self.sockets, strict=True):
            try:
                listener.accept()[0].close()
                found.append(path)
            except BlockingIOError:
                pass
        return found

    def close(self) -> None:
        for listener, path in zip(self.sockets, self.paths, strict=True):
            listener.close()
            path.unlink(missing_ok=True)


@pytest.fixture
def system_sockets() -> Iterator[UnixListeners]:
    """Sockets where services put theirs, outside the places the sandbox used to hide (home, /tmp,
    /run): /srv, /opt, /var, and a folder of its own under /."""
    if os.geteuid() != 0:
        pytest.skip("making sockets in /srv, /opt, /var and / needs root (CI runs as root)")
    name = f"llama-lsp-{os.getpid()}.sock"
    own = Path(f"/llama-lsp-sockets-{os.getpid()}")
    own.mkdir()
    places = [Path("/srv"), Path("/opt"), Path("/var"), own]
    for place in places:
        place.mkdir(exist_ok=True)
    listeners = UnixListeners([place / name for place in places])
    yield listeners
    listeners.close()
    own.rmdir()


async def test_a_check_reaches_no_socket_outside_its_copy(system_sockets: UnixListeners, tmp_path: Path):
    """With `verifySandbox` at its default: the sockets are not in the check's filesystem at all, and
    one in a tree it does get (the workspace's virtual environment) is covered."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text(MODULE)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True)
    in_venv = UnixListeners([project / ".venv" / "agent.sock"])
    try:
        targets = [*system_sockets.paths, project / ".venv" / "agent.sock", Path(".venv/agent.sock")]
        script = tmp_path / "connect.py"
        script.write_text(CONNECT)
        command = f"{sys.executable} -c '{CONNECT}' {' '.join(map(str, targets))}"
        check = Verifier(command, 30, 3, WorkspaceFiles([project]))
        assert check.check_sandbox.mode == "auto"
        assert await check.check_latest(proposed(project)) is None, check.verification.output
        output = check.verification.output
        assert check.verification.sandbox == "bwrap"
        for target in targets:
            assert f"not reached {target}" in output, output
        assert "reached /" not in output.replace("not reached /", "")
        assert system_sockets.reached() == [] and in_venv.reached() == []
    finally:
        in_venv.close()


@pytest.mark.parametrize("mode", ["auto", "none"])
async def test_a_check_that_allocates_past_the_memory_limit_fails(
    project: Path, mode: SandboxMode, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(check_sandbox, "DATA_LIMIT", 256 << 20)
    allocate = f"{sys.executable} -c 'bytearray(512 << 20); print(\"allocated\")'"
    check = Verifier(
        f"cat /proc/self/limits; {allocate}", 30, 3, WorkspaceFiles([project]), CheckSandbox(mode)
    )
    problem = await check.check_latest(proposed(project))
    output = check.verification.output
    assert problem is not None and "MemoryError" in output and "allocated" not in output, output
    limits = {line[:26].strip(): line[26:].split() for line in output.splitlines()}
    assert limits["Max data size"][:2] == [str(256 << 20)] * 2


@pytest.mark.parametrize("where", ["copy", "tmp"])
@pytest.mark.parametrize("mode", ["auto", "none"])
async def test_a_check_that_writes_past_the_write_limit_is_stopped(
    project: Path, mode: SandboxMode, where: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(check_sandbox, "WRITE_LIMIT", 8 << 20)
    folder = "." if where == "copy" else "$TMPDIR"
    write = f"head -c 1048576 /dev/zero > {folder}/f$i || exit 3"
    command = f"for i in $(seq 1 40); do {write}; sleep 0.05; done; echo done"
    check = Verifier(command, 30, 3, WorkspaceFiles([project]), CheckSandbox(mode))
    started = time.monotonic()
    problem = await check.check_latest(proposed(project))
    output = check.verification.output
    assert problem is not None and "done" not in output, output
    if mode == "auto" and where == "tmp":  # memory of the limit's size: full
        assert "No space left on device" in output and "[exit status 3]" in output, output
    else:
        assert "[killed: the check wrote more than 8 MB]" in output, output
    assert time.monotonic() - started < 10
