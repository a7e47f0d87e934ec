"""Finds the llama-lsp server, or installs it in a virtualenv of its own: one procedure for both editors.

Both clients ship this file: the Neovim plugin runs it from `editors/nvim/python/`, the VS Code extension
from its `server/` folder, where `make vsix` copies it beside the wheel. It needs only the standard
library, so any Python 3.10+ runs it before the server exists. Each editor finds a Python (the one thing
the bootstrap cannot do for it), runs this file, shows the progress lines and uses the command of the last
line. A server command the user configured wins before the bootstrap runs, in the editor.

    llama_lsp_bootstrap.py locate  --root DIR [--workspace DIR]...
    llama_lsp_bootstrap.py install --root DIR [--wheel FILE] [--prune]
    llama_lsp_bootstrap.py prune   --root DIR --keep VERSION

`--root` is where the editor keeps its installed servers, one virtualenv per version (`DIR/0.1.0`). A
version's folder counts only once its marker is written, after `llama-lsp --version` answered: an install
that was interrupted leaves a folder that is never used, and the next install replaces it.

locate, first found: `llama-lsp` on PATH; `.venv` of each `--workspace` folder (the editor passes only
folders the user trusts: the executable is the folder's own code); `.venv` of the llama-lsp checkout this
file lives in; the newest server installed under `--root`.

install, what it installs, first found: `--wheel`; the newest `llama_lsp-*.whl` beside this file (the
extension's bundled wheel); the newest in the checkout's `dist/` (`make dist`); the checkout's source (pip
compiles llama.cpp: 10-20 minutes). Then `python -m venv`, `pip install`, `llama-lsp --version`. A failed or
cancelled (SIGTERM, SIGINT) install removes its version folder and the folders it made; `--prune` removes
the other versions once it succeeded (prune does that alone, once the editor stopped the old server).

Output, one JSON object a line on stdout:
    {"progress": "installing the server with pip", "step": 2, "steps": 3, "detail": "pip install ..."}
    {"output": "Successfully installed ..."}      a line that the running step printed
and last, either the result (exit 0) or an error (exit 1):
    {"command": [...] or null, "source": "PATH", "version": ..., "update": ..., "available": ..., ...}
    {"error": "...", "step": "...", "detail": "...", "fix": "..."}
Exit 3 with an error: this Python cannot do it (older than 3.10; an install without venv): the editor
tries its next Python.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path

MIN_PYTHON = (3, 10)
PYTHON_HINT = "Install Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv"
UNUSABLE = 3  # exit status: the editor tries its next Python

# The file parses on Python 3.6 and later, so that an older Python gets here and says why it stops.
if sys.version_info[:2] < MIN_PYTHON:
    found = ".".join(str(part) for part in sys.version_info[:3])
    print(
        json.dumps(
            {
                "error": f"Python {found} ({sys.executable}) is older than 3.10",
                "step": "finding Python",
                "fix": PYTHON_HINT,
            }
        ),
        flush=True,
    )
    sys.exit(UNUSABLE)

MARKER = "llama-lsp-installed"
WINDOWS = os.name == "nt"
EXECUTABLE = "llama-lsp.exe" if WINDOWS else "llama-lsp"
WHEEL_NAME = re.compile(r"^llama_lsp-([^-]+)-.+\.whl$")
TAIL_LINES = 12
STEPS = 3
# Seconds per step; a source build compiles llama.cpp.
VENV_TIMEOUT, PIP_TIMEOUT, SOURCE_TIMEOUT, VERSION_TIMEOUT = 180, 900, 3600, 60

PIP_HINT = (
    "Check that pip can reach your package index (PyPI, or the one pip is configured with) for the "
    "server's dependencies, and that the wheel is whole (`make dist` in a llama-lsp checkout builds it); "
    "then try again"
)
SOURCE_HINT = (
    "Building from source needs a C++ compiler, CMake and git (e.g. sudo apt install build-essential cmake "
    "git); or run `make dist` in the checkout and install the wheel it builds"
)
NOT_RUNNING_HINT = (
    "The installed server does not run here: install a wheel built for this machine "
    "(`make dist` in a llama-lsp checkout builds one)"
)
MISMATCH_HINT = (
    "The wheel's name and the server's version differ: rebuild it (make dist; for VS Code, make vsix)"
)


class Failure(Exception):
    """A step that failed: the last line's `error`, with what the user can do."""

    def __init__(self, error: str, step: str = "", detail: str = "", fix: str = "", status: int = 1):
        super().__init__(error)
        self.fields = {"error": error, "step": step, "detail": detail, "fix": fix}
        self.status = status


class Cancelled(Exception):
    """SIGTERM or SIGINT: the editor cancelled the install."""


class Output:
    """The JSON lines on stdout. An editor that went away (a closed pipe) lets the work finish silently:
    an install that completes is found next time."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.closed = False

    def emit(self, **fields) -> None:
        if self.closed:
            return
        try:
            self.stream.write(json.dumps(fields) + "\n")
            self.stream.flush()
        except (BrokenPipeError, OSError):
            self.closed = True


# ---------------------------------------------------------------- versions and places


def version_key(version: str) -> tuple:
    """`1.2.10` after `1.2.9`, `0.1` equal to `0.1.0`, a pre-release (`0.2.0rc1`, `0.2.0.dev1`) before its
    release."""
    match = re.match(r"(\d+(?:\.\d+)*)(.*)$", version.strip())
    if match is None:
        return ((), 0, version)
    release = [int(part) for part in match.group(1).split(".")]
    while release and release[-1] == 0:
        release.pop()
    rest = match.group(2)
    return (tuple(release), 1 if rest == "" else 0, rest)


def newer(a: str, b: str) -> bool:
    return version_key(a) > version_key(b)


def venv_executable(venv: Path) -> Path:
    return venv / ("Scripts" if WINDOWS else "bin") / EXECUTABLE


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if WINDOWS else "bin/python")


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def project_field(pyproject: Path, field: str) -> str | None:
    """A `[project]` string field of a pyproject.toml, read by line (tomllib is 3.11+)."""
    try:
        lines = pyproject.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    section = None
    for line in lines:
        header = re.match(r"^\[([^\]]+)\]", line)
        if header:
            section = header.group(1).strip()
        elif section == "project":
            value = re.match(rf'^{field}\s*=\s*"([^"]+)"', line)
            if value:
                return value.group(1)
    return None


def find_checkout(start: Path) -> Path | None:
    """The llama-lsp repository this file lives in (editors/nvim/python/, or the extension's server/ in
    editors/vscode), or None: an installed extension lives in no checkout."""
    for folder in [start, *start.parents][:4]:
        if project_field(folder / "pyproject.toml", "name") == "llama-lsp":
            return folder
    return None


HERE = Path(__file__).resolve().parent
CHECKOUT = find_checkout(HERE)


def installed_servers(root: Path) -> list[dict]:
    """The complete servers under `root` (their marker written), newest first."""
    try:
        names = [entry.name for entry in root.iterdir() if entry.is_dir()]
    except OSError:
        return []
    found = []
    for name in names:
        executable = venv_executable(root / name)
        if name[:1].isdigit() and (root / name / MARKER).is_file() and is_executable(executable):
            found.append({"version": name, "dir": str(root / name), "command": [str(executable)]})
    return sorted(found, key=lambda server: version_key(server["version"]), reverse=True)


def wheel_version(path: Path) -> str | None:
    """The version in a wheel's name (llama_lsp-VERSION-TAGS.whl), or None for another file."""
    match = WHEEL_NAME.match(path.name)
    return match.group(1) if match else None


def newest_wheel(folder: Path) -> tuple[Path, str] | None:
    try:
        paths = [path for path in folder.glob("llama_lsp-*.whl") if path.is_file()]
    except OSError:
        return None
    wheels = [(path, version) for path in paths for version in [wheel_version(path)] if version]
    return max(wheels, key=lambda wheel: (version_key(wheel[1]), wheel[0].stat().st_mtime), default=None)


def find_package(wheel: str | None) -> dict | None:
    """What an install would install: `spec` (what pip gets), `version`, `source` (a checkout to build)."""
    if wheel:
        path = Path(os.path.expanduser(wheel)).resolve()
        if not path.is_file():
            raise Failure(f"no such wheel: {path}", step="choosing the wheel")
        version = wheel_version(path)
        if not version:
            raise Failure(
                f"not a llama-lsp wheel (llama_lsp-VERSION-...whl): {path}",
                step="choosing the wheel",
            )
        return {"spec": str(path), "version": version, "source": False}
    folders = [HERE] + ([CHECKOUT / "dist"] if CHECKOUT else [])
    for folder in folders:
        found = newest_wheel(folder)
        if found:
            return {"spec": str(found[0]), "version": found[1], "source": False}
    if CHECKOUT:
        version = project_field(CHECKOUT / "pyproject.toml", "version")
        if version:
            return {"spec": str(CHECKOUT), "version": version, "source": True}
    return None


# ---------------------------------------------------------------- locate


def locate(root: Path, workspaces: list[str]) -> dict:
    command, source = None, None
    on_path = shutil.which(EXECUTABLE)
    if on_path:
        command, source = [os.path.abspath(on_path)], "PATH"
    places = [(Path(folder) / ".venv", "workspace") for folder in workspaces]
    places += [(CHECKOUT / ".venv", "checkout")] if CHECKOUT else []
    for venv, where in places:
        if command is None and is_executable(venv_executable(venv)):
            command, source = [str(venv_executable(venv))], where
    installed = installed_servers(root)
    version = None
    if command is None and installed:
        command, source, version = installed[0]["command"], "installed", installed[0]["version"]
    try:
        available = find_package(None)
    except Failure:
        available = None
    result = {
        "command": command,
        "source": source,
        "version": version,
        "installed": installed,
        "available": available and {"version": available["version"], "from": available["spec"]},
        "update": None,
    }
    if version is not None and available and newer(available["version"], version):
        result["update"] = available["version"]
    return result


# ---------------------------------------------------------------- install


def step_env() -> dict:
    # pip never waits for a prompt; a PYTHONPATH or PYTHONHOME of the editor's would leak into the venv.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_NO_INPUT="1", PYTHONUNBUFFERED="1")
    return env


def run_step(out: Output, number: int, name: str, detail: str, argv: list[str], timeout: float, fix: str):
    """Runs one step, passing on each line it prints; returns its lines; a Failure when it fails."""
    out.emit(progress=name, step=number, steps=STEPS, detail=detail)
    lines: deque[str] = deque(maxlen=200)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=step_env(),
            start_new_session=not WINDOWS,  # its own group: a cancel stops pip's children too
        )
    except OSError as exc:
        raise Failure(f"{name} failed", step=name, detail=str(exc), fix=fix) from exc
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        kill(process)

    timer = threading.Timer(timeout, stop)
    # A cancel's signal must reach this (main) thread, blocked reading the step's output: a thread that
    # does not block it may take it, and the handler would wait for this one to wake.
    cancels = {signal.SIGTERM, signal.SIGINT}
    mask = None if WINDOWS else signal.pthread_sigmask(signal.SIG_BLOCK, cancels)
    timer.start()  # it inherits the mask: cancels stay with this thread
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            for line in re.split(r"\r", raw.rstrip("\n")):
                if line.strip():
                    lines.append(line.rstrip())
                    out.emit(output=line.rstrip())
        code = process.wait()
    except BaseException:
        kill(process)
        raise
    finally:
        timer.cancel()
    tail = "\n".join(list(lines)[-TAIL_LINES:])
    if timed_out.is_set():
        raise Failure(f"{name} failed (stopped after {timeout:.0f} s)", step=name, detail=tail, fix=fix)
    if code != 0:
        raise Failure(f"{name} failed (exit {code})", step=name, detail=tail, fix=fix)
    return list(lines)


def kill(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    try:
        if WINDOWS:
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()


def made_folders(root: Path) -> list[Path]:
    """The folders that making `root` creates, deepest first: a failed install removes them when empty."""
    missing = []
    for folder in [root, *root.parents]:
        if folder.exists():
            break
        missing.append(folder)
    return missing


def install(out: Output, root: Path, wheel: str | None, prune_others: bool) -> dict:
    package = find_package(wheel)
    if package is None:
        raise Failure(
            "nothing to install: no llama-lsp wheel beside the bootstrap and no llama-lsp checkout around it",
            step="choosing the wheel",
            fix="Give the wheel to install (llama_lsp-VERSION-...whl; `make dist` in a checkout builds it)",
        )
    try:
        import ensurepip  # noqa: F401  (venv needs it to put pip in the virtualenv)
        import venv  # noqa: F401
    except ImportError as exc:
        raise Failure(
            f"{sys.executable} cannot make a virtualenv ({exc})",
            step="finding Python",
            fix=PYTHON_HINT,
            status=UNUSABLE,
        ) from exc
    version, spec = package["version"], package["spec"]
    if package["source"]:
        out.emit(
            progress=f"building llama-lsp {version} from {spec}: pip compiles llama.cpp, which takes ~10-20 "
            "minutes (`make dist` there builds a wheel that installs in seconds)"
        )
    else:
        out.emit(progress=f"installing llama-lsp {version} from {spec}")
    target = root / version
    made = made_folders(root)
    shutil.rmtree(target, ignore_errors=True)  # what an interrupted install left
    try:
        root.mkdir(parents=True, exist_ok=True)
        python = ".".join(map(str, sys.version_info[:3]))
        run_step(
            out,
            1,
            "creating the virtualenv",
            f"{sys.executable} -m venv {target} (Python {python})",
            [sys.executable, "-m", "venv", str(target)],
            VENV_TIMEOUT,
            PYTHON_HINT,
        )
        pip = ["-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", spec]
        run_step(
            out,
            2,
            "installing the server with pip",
            f"pip install {spec}",
            [str(venv_python(target)), *pip],
            SOURCE_TIMEOUT if package["source"] else PIP_TIMEOUT,
            SOURCE_HINT if package["source"] else PIP_HINT,
        )
        executable = venv_executable(target)
        checking = "checking llama-lsp --version"
        lines = run_step(
            out,
            3,
            checking,
            f"{executable} --version",
            [str(executable), "--version"],
            VERSION_TIMEOUT,
            NOT_RUNNING_HINT,
        )
        first = lines[0].strip() if lines else ""
        if first != f"llama-lsp {version}":
            raise Failure(
                f"{checking} failed",
                step=checking,
                detail=f'expected "llama-lsp {version}", got "{first}"',
                fix=MISMATCH_HINT,
            )
        (target / MARKER).write_text(first + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    if prune_others:
        prune(root, version)
    return {
        "command": [str(executable)],
        "source": "installed",
        "version": version,
        "dir": str(target),
        "update": None,
    }


def prune(root: Path, keep: str) -> dict:
    """Removes every version but `keep` (their servers must not be running)."""
    removed = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name != keep:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry.name)
    return {"kept": keep, "removed": removed}


# ---------------------------------------------------------------- main


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="action", required=True)
    for name in ("locate", "install", "prune"):
        command = commands.add_parser(name)
        command.add_argument("--root", required=True, type=Path, help="where the installed servers live")
        if name == "locate":
            command.add_argument(
                "--workspace", action="append", default=[], help="a trusted workspace folder"
            )
        if name == "install":
            command.add_argument("--wheel", help="the wheel to install")
            command.add_argument("--prune", action="store_true", help="then remove the other versions")
        if name == "prune":
            command.add_argument("--keep", required=True, help="the version to keep")
    return parser.parse_args(argv)


def cancel(signum, frame):
    for other in (signal.SIGTERM, signal.SIGINT):
        signal.signal(other, signal.SIG_IGN)  # the cleanup runs once, to its end
    raise Cancelled()


def main(argv: list[str] | None = None, out: Output | None = None) -> int:
    out = out or Output()
    args = parse(sys.argv[1:] if argv is None else argv)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, cancel)
    root = Path(os.path.expanduser(str(args.root))).absolute()
    try:
        if args.action == "locate":
            result = locate(root, args.workspace)
        elif args.action == "install":
            result = install(out, root, args.wheel, args.prune)
        else:
            result = prune(root, args.keep)
    except Failure as failure:
        out.emit(**failure.fields)
        return failure.status
    except Cancelled:
        out.emit(error="cancelled", step="", detail="", fix="")
        return 1
    out.emit(**result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
