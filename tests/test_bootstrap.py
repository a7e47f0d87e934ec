"""The bootstrap both editors run to find or install the server (editors/nvim/python/llama_lsp_bootstrap.py),
run as the editors run it: a Python process whose JSON lines are read back, real virtualenvs, real pip.

Most wheels here are small ones built by the test (no dependencies: pip needs no index); one test installs
`make dist`'s wheel as the VS Code extension carries it. Fake checkouts and extensions are folders with a
copy of the bootstrap in the place it has there (it finds its checkout from where it lives).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

from .conftest import ROOT

BOOTSTRAP = ROOT / "editors" / "nvim" / "python" / "llama_lsp_bootstrap.py"
VSCODE = ROOT / "editors" / "vscode"
# A PATH with the system's tools and no llama-lsp.
SYSTEM_PATH = "/usr/bin:/bin"
PYTHON_HINT = "Install Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llama_lsp_bootstrap", BOOTSTRAP)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Ran:
    def __init__(self, process: subprocess.CompletedProcess[str]):
        self.code = process.returncode
        self.stderr = process.stderr
        self.lines = [json.loads(line) for line in process.stdout.splitlines()]
        assert self.lines, f"no output (exit {self.code}): {process.stderr}"
        self.events = self.lines[:-1]
        self.last = self.lines[-1]

    @property
    def steps(self) -> list[str]:
        return [e["progress"] for e in self.events if "step" in e]

    @property
    def output(self) -> str:
        return "\n".join(e["output"] for e in self.events if "output" in e)


def env(**extra: str | None) -> dict[str, str]:
    """The environment an editor would give, with no llama-lsp on PATH; None leaves a variable out."""
    dropped = ("LLAMA_LSP_", "VIRTUAL_ENV", "PYTHONPATH", "PIP_")
    base = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    # pip must not reach an index: the wheels built here have no dependencies.
    merged = {**base, "PATH": SYSTEM_PATH, "PIP_NO_INDEX": "1", **extra}
    return {k: v for k, v in merged.items() if v is not None}


def run(bootstrap: Path, *args: str | Path, timeout: float = 300, **extra: str | None) -> Ran:
    process = subprocess.run(
        [sys.executable, str(bootstrap), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(**extra),
    )
    return Ran(process)


def executable(path: Path, text: str = "#!/bin/sh\necho llama-lsp\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def checkout(tmp_path: Path, version: str = "0.3.0") -> tuple[Path, Path]:
    """A llama-lsp checkout with the bootstrap where the plugin has it; returns (checkout, bootstrap)."""
    root = tmp_path / "checkout"
    (root / "editors" / "nvim" / "python").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        f'[build-system]\nrequires = []\n\n[project]\nname = "llama-lsp"\nversion = "{version}"\n'
    )
    bootstrap = root / "editors" / "nvim" / "python" / BOOTSTRAP.name
    shutil.copy(BOOTSTRAP, bootstrap)
    return root, bootstrap


def extension(tmp_path: Path) -> Path:
    """An installed VS Code extension: the bootstrap in server/, beside its wheel; returns the bootstrap."""
    server = tmp_path / "extensions" / "llama-lsp.llama-lsp-0.1.0" / "server"
    server.mkdir(parents=True)
    return Path(shutil.copy(BOOTSTRAP, server / BOOTSTRAP.name))


def build_wheel(
    folder: Path, version: str, printed: str | None = None, exit_code: int = 0, requires: str = ""
) -> Path:
    """A real wheel named for `version` whose `llama-lsp --version` prints `llama-lsp <printed>` (what the
    real server prints first) and exits with `exit_code`; `requires`: a dependency pip must fetch."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"llama_lsp-{version}-py3-none-any.whl"
    info = f"llama_lsp-{version}.dist-info"
    main = (
        "import sys\n\ndef main():\n"
        f"    print('llama-lsp {printed or version}')\n    print('native library (fake)')\n"
        f"    sys.exit({exit_code})\n"
    )
    files = {
        "fake_llama_lsp/__init__.py": main,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: llama-lsp\nVersion: {version}\n"
        + (f"Requires-Dist: {requires}\n" if requires else ""),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nllama-lsp = fake_llama_lsp:main\n",
    }
    record = []
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            data = text.encode()
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def installed(root: Path, version: str) -> Path:
    """A complete install, as far as locate can tell: the executable and the marker."""
    (root / version).mkdir(parents=True, exist_ok=True)
    (root / version / "llama-lsp-installed").write_text(f"llama-lsp {version}\n")
    return executable(root / version / "bin" / "llama-lsp")


# ---------------------------------------------------------------- the file itself


def test_an_older_python_parses_the_file_and_says_why_it_stops(tmp_path: Path):
    """Python 3.6-3.9 reach the version check (exit 3: the editor tries its next Python)."""
    source = BOOTSTRAP.read_text()
    for minor in (6, 7, 8, 9):
        ast.parse(source, feature_version=(3, minor))
    pretend = (
        "import runpy, sys; sys.version_info = (3, 8, 10, 'final', 0); sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    process = subprocess.run(
        [sys.executable, "-c", pretend, str(BOOTSTRAP), "locate", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 3, process
    [line] = [json.loads(line) for line in process.stdout.splitlines()]
    assert re.fullmatch(r"Python 3\.8\.10 \(.+\) is older than 3\.10", line["error"]), line
    assert line["fix"] == PYTHON_HINT


def test_the_bootstrap_passes_ruff_which_make_lint_leaves_out():
    """pyproject.toml's ruff excludes editors/; this file is Python all the same."""
    ruff = Path(sys.executable).parent / "ruff"
    for check in (["check"], ["format", "--check"]):
        done = subprocess.run([ruff, *check, BOOTSTRAP], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_extension_packs_the_same_file():
    """One source: the vsix rule copies it beside the wheel, .vscodeignore keeps it, the extension runs
    it from there; every copy present (server/, a built vsix) is the same file."""
    makefile = (ROOT / "Makefile").read_text()
    assert "BOOTSTRAP := editors/nvim/python/llama_lsp_bootstrap.py" in makefile
    rule = makefile[makefile.index("$(VSIX):") :].split("\n\n")[0]
    assert "$(BOOTSTRAP)" in rule.splitlines()[0], rule
    assert "cp $(WHEEL) $(BOOTSTRAP) $(VSCODE)/server/" in rule, rule
    assert "!server/llama_lsp_bootstrap.py" in (VSCODE / ".vscodeignore").read_text().splitlines()
    assert "'server', BOOTSTRAP" in (VSCODE / "src" / "serverCommand.ts").read_text()
    assert f"'{BOOTSTRAP.name}'" in (VSCODE / "src" / "serverCommand.ts").read_text()
    source = BOOTSTRAP.read_bytes()
    copy = VSCODE / "server" / BOOTSTRAP.name
    if copy.exists():
        assert copy.read_bytes() == source, f"{copy} differs from {BOOTSTRAP}: make vsix"
    vsix = VSCODE / "llama-lsp.vsix"
    if vsix.exists():
        packed = zipfile.ZipFile(vsix).read(f"extension/server/{BOOTSTRAP.name}")
        assert packed == source, f"{vsix} carries another bootstrap: make vsix"


def test_versions_compare_by_number_and_a_pre_release_comes_first():
    bootstrap = load()
    assert bootstrap.newer("0.10.0", "0.9.1") and bootstrap.newer("1.2.10", "1.2.9")
    assert not bootstrap.newer("0.1.0", "0.2.0")
    assert bootstrap.version_key("0.1") == bootstrap.version_key("0.1.0")
    assert bootstrap.newer("0.2.0", "0.2.0rc1") and bootstrap.newer("0.2.0", "0.2.0.dev1")
    assert bootstrap.newer("0.2.0rc1", "0.1.9")
    versions = ["0.10.0", "0.2.0", "0.9.0", "0.2.0rc1"]
    assert sorted(versions, key=bootstrap.version_key) == ["0.2.0rc1", "0.2.0", "0.9.0", "0.10.0"]


def test_windows_layout():
    bootstrap = load()
    bootstrap.WINDOWS, bootstrap.EXECUTABLE = True, "llama-lsp.exe"
    assert bootstrap.venv_executable(Path("C:/w/.venv")) == Path("C:/w/.venv/Scripts/llama-lsp.exe")


# ---------------------------------------------------------------- locate


def test_locate_order_path_then_trusted_workspace_then_checkout_then_newest_installed(tmp_path: Path):
    repo, bootstrap = checkout(tmp_path)
    root = tmp_path / "servers"
    workspace = tmp_path / "project"
    for version in ("0.1.0", "0.10.0", "0.9.0"):
        installed(root, version)

    newest = run(bootstrap, "locate", "--root", root).last
    assert newest["command"] == [str(root / "0.10.0" / "bin" / "llama-lsp")], newest
    assert (newest["source"], newest["version"]) == ("installed", "0.10.0")
    assert [s["version"] for s in newest["installed"]] == ["0.10.0", "0.9.0", "0.1.0"]

    executable(repo / ".venv" / "bin" / "llama-lsp")
    assert run(bootstrap, "locate", "--root", root).last["source"] == "checkout"

    executable(workspace / ".venv" / "bin" / "llama-lsp")
    # Only the folders the editor passes (the trusted ones) are looked in.
    assert run(bootstrap, "locate", "--root", root).last["source"] == "checkout"
    found = run(bootstrap, "locate", "--root", root, "--workspace", workspace).last
    assert (found["command"], found["source"]) == ([str(workspace / ".venv/bin/llama-lsp")], "workspace")

    bin_dir = tmp_path / "bin"
    executable(bin_dir / "llama-lsp")
    on_path = run(
        bootstrap, "locate", "--root", root, "--workspace", workspace, PATH=f"{bin_dir}:{SYSTEM_PATH}"
    )
    assert (on_path.last["command"], on_path.last["source"]) == ([str(bin_dir / "llama-lsp")], "PATH")
    assert on_path.last["version"] is None and len(on_path.last["installed"]) == 3


def test_locate_finds_nothing_and_says_what_an_install_would_take(tmp_path: Path):
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    nothing = run(bootstrap, "locate", "--root", root)
    assert nothing.code == 0 and nothing.last["command"] is None, nothing.lines
    assert nothing.last["available"] is None and nothing.last["installed"] == []
    wheel = build_wheel(bootstrap.parent, "0.1.0")
    assert run(bootstrap, "locate", "--root", root).last["available"] == {
        "version": "0.1.0",
        "from": str(wheel),
    }
    assert not root.exists(), "locate wrote"


def test_a_half_installed_version_is_not_used(tmp_path: Path):
    """A version folder without the marker: its install never reached the end."""
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    installed(root, "0.1.0")
    executable(root / "0.2.0" / "bin" / "llama-lsp")
    found = run(bootstrap, "locate", "--root", root).last
    assert found["version"] == "0.1.0" and [s["version"] for s in found["installed"]] == ["0.1.0"], found
    (root / "0.1.0" / "llama-lsp-installed").unlink()
    assert run(bootstrap, "locate", "--root", root).last["command"] is None


def test_locate_names_an_update_when_a_newer_wheel_is_beside_it(tmp_path: Path):
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    installed(root, "0.1.0")
    build_wheel(bootstrap.parent, "0.1.0")
    assert run(bootstrap, "locate", "--root", root).last["update"] is None
    build_wheel(bootstrap.parent, "0.2.0")
    found = run(bootstrap, "locate", "--root", root).last
    assert (found["version"], found["update"]) == ("0.1.0", "0.2.0"), found


def test_what_an_install_takes_first_found(tmp_path: Path):
    """The wheel given; else the newest beside the bootstrap; else the checkout's newest dist/ wheel (by
    version, then the latest built); else the checkout's source."""
    repo, bootstrap = checkout(tmp_path, version="0.3.0")
    root = tmp_path / "servers"

    def available(*args: str | Path) -> dict:
        return run(bootstrap, "locate", "--root", root, *args).last["available"]

    assert available() == {"version": "0.3.0", "from": str(repo)}
    build_wheel(repo / "dist", "0.2.0")
    newest = build_wheel(repo / "dist", "0.10.0")
    assert available() == {"version": "0.10.0", "from": str(newest)}
    rebuilt = build_wheel(tmp_path / "other", "0.10.0")
    rebuilt = Path(shutil.move(rebuilt, repo / "dist" / "llama_lsp-0.10.0-py3-none-linux_x86_64.whl"))
    os.utime(rebuilt, (newest.stat().st_mtime + 10,) * 2)
    assert available() == {"version": "0.10.0", "from": str(rebuilt)}
    beside = build_wheel(bootstrap.parent, "0.0.1")
    assert available() == {"version": "0.0.1", "from": str(beside)}

    missing = run(bootstrap, "install", "--root", root, "--wheel", tmp_path / "nowhere.whl")
    assert missing.code == 1 and missing.last["error"] == f"no such wheel: {tmp_path / 'nowhere.whl'}"
    (tmp_path / "server.whl").write_text("")
    named = run(bootstrap, "install", "--root", root, "--wheel", tmp_path / "server.whl")
    assert named.last["error"].startswith("not a llama-lsp wheel (llama_lsp-VERSION-...whl)"), named.lines

    nothing = run(extension(tmp_path / "x"), "install", "--root", root)
    assert nothing.code == 1 and nothing.last["error"].startswith("nothing to install"), nothing.lines
    assert not root.exists()


# ---------------------------------------------------------------- install


def test_a_good_wheel_installs_then_a_newer_one_replaces_it(tmp_path: Path):
    """The extension's layout: no --wheel, the wheel beside the bootstrap. Progress comes as three
    numbered steps with pip's lines; the result is the command; --prune removes the older version."""
    bootstrap = extension(tmp_path)
    root = tmp_path / "storage" / "server"
    build_wheel(bootstrap.parent, "0.1.0")
    first = run(bootstrap, "install", "--root", root)
    assert first.code == 0, first.lines
    command = str(root / "0.1.0" / "bin" / "llama-lsp")
    assert first.last == {
        "command": [command],
        "source": "installed",
        "version": "0.1.0",
        "dir": str(root / "0.1.0"),
        "update": None,
    }
    assert first.events[0]["progress"].startswith("installing llama-lsp 0.1.0 from ")
    assert first.steps == [
        "creating the virtualenv",
        "installing the server with pip",
        "checking llama-lsp --version",
    ]
    assert [(e["step"], e["steps"]) for e in first.events if "step" in e] == [(1, 3), (2, 3), (3, 3)]
    assert "Successfully installed llama-lsp-0.1.0" in first.output
    assert (root / "0.1.0" / "llama-lsp-installed").read_text() == "llama-lsp 0.1.0\n"
    assert run(bootstrap, "locate", "--root", root).last["command"] == [command]

    build_wheel(bootstrap.parent, "0.2.0")
    assert run(bootstrap, "locate", "--root", root).last["update"] == "0.2.0"
    update = run(bootstrap, "install", "--root", root)
    assert update.last["version"] == "0.2.0", update.lines
    # Without --prune both stay (the editor prunes once the old server stopped); the newest is found.
    assert sorted(p.name for p in root.iterdir()) == ["0.1.0", "0.2.0"]
    found = run(bootstrap, "locate", "--root", root).last
    assert (found["version"], found["update"]) == ("0.2.0", None)
    pruned = run(bootstrap, "prune", "--root", root, "--keep", "0.2.0")
    assert pruned.last == {"kept": "0.2.0", "removed": ["0.1.0"]}
    assert [p.name for p in root.iterdir()] == ["0.2.0"]
    version = subprocess.run(
        [root / "0.2.0" / "bin" / "llama-lsp", "--version"], capture_output=True, text=True
    )
    assert version.stdout.splitlines()[0] == "llama-lsp 0.2.0"


def test_install_prune_removes_the_other_versions_at_once(tmp_path: Path):
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    installed(root, "0.0.9")
    (root / "0.0.8" / "bin").mkdir(parents=True)
    wheel = build_wheel(tmp_path / "wheels", "0.1.0")
    done = run(bootstrap, "install", "--root", root, "--wheel", wheel, "--prune")
    assert done.code == 0, done.lines
    assert [p.name for p in root.iterdir()] == ["0.1.0"]


def test_a_corrupt_wheel_fails_at_pip_and_leaves_what_was_there(tmp_path: Path):
    bootstrap = extension(tmp_path)
    root = tmp_path / "data" / "llama-lsp" / "server"
    wheel = tmp_path / "llama_lsp-0.3.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"not a zip file\n" * 100)
    ran = run(bootstrap, "install", "--root", root, "--wheel", wheel, "--prune")
    assert ran.code == 1, ran.lines
    assert ran.steps == ["creating the virtualenv", "installing the server with pip"]
    assert ran.last["step"] == "installing the server with pip"
    assert ran.last["error"] == "installing the server with pip failed (exit 1)"
    assert re.search(r"zip|wheel|invalid", ran.last["detail"], re.I), ran.last
    assert "package index" in ran.last["fix"]
    # The folders the install made are gone too: it wrote nothing.
    assert not (tmp_path / "data").exists()

    installed(root, "0.0.9")
    again = run(bootstrap, "install", "--root", root, "--wheel", wheel, "--prune")
    assert again.code == 1 and [p.name for p in root.iterdir()] == ["0.0.9"]


def test_a_server_that_prints_another_version_or_does_not_start_fails_the_check(tmp_path: Path):
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    mismatch = run(
        bootstrap, "install", "--root", root, "--wheel", build_wheel(tmp_path / "a", "0.4.0", "0.3.9")
    )
    assert mismatch.code == 1 and mismatch.last["error"] == "checking llama-lsp --version failed"
    assert mismatch.last["detail"] == 'expected "llama-lsp 0.4.0", got "llama-lsp 0.3.9"'
    assert "make vsix" in mismatch.last["fix"]
    crash = run(
        bootstrap, "install", "--root", root, "--wheel", build_wheel(tmp_path / "b", "0.5.0", exit_code=2)
    )
    assert crash.last["error"] == "checking llama-lsp --version failed (exit 2)", crash.last
    assert "does not run here" in crash.last["fix"]
    assert not root.exists()


def test_an_interrupted_install_is_not_used_and_a_retry_repairs_it(tmp_path: Path):
    """What a killed install leaves (a virtualenv with the server in it, no marker) is never found; the
    next install makes the folder again."""
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    wheel = build_wheel(bootstrap.parent, "0.1.0")
    subprocess.run([sys.executable, "-m", "venv", root / "0.1.0"], check=True, timeout=180)
    pip = [root / "0.1.0" / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", wheel]
    subprocess.run(pip, check=True, timeout=180)
    (root / "0.1.0" / "left-over").write_text("from the killed install\n")
    assert (root / "0.1.0" / "bin" / "llama-lsp").exists()
    assert run(bootstrap, "locate", "--root", root).last["command"] is None

    repaired = run(bootstrap, "install", "--root", root)
    assert repaired.code == 0, repaired.lines
    assert not (root / "0.1.0" / "left-over").exists()
    assert run(bootstrap, "locate", "--root", root).last["version"] == "0.1.0"


def test_a_cancelled_install_stops_its_step_and_removes_what_it_made(tmp_path: Path):
    """SIGTERM (VS Code's cancel) during pip: pip is stopped and the version folder removed."""
    bootstrap = extension(tmp_path)
    root = tmp_path / "servers"
    installed(root, "0.0.9")
    # pip waits for a dependency from an index that never answers.
    build_wheel(bootstrap.parent, "0.1.0", requires="llama-lsp-test-dependency")
    with socket_that_never_answers() as url:
        process = subprocess.Popen(
            [sys.executable, bootstrap, "install", "--root", root],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(PIP_NO_INDEX=None, PIP_INDEX_URL=url, PIP_TIMEOUT="600"),
        )
        assert process.stdout is not None
        for line in process.stdout:
            if json.loads(line).get("progress") == "installing the server with pip":
                break
        process.send_signal(signal.SIGTERM)
        rest, stderr = process.communicate(timeout=60)
    last = json.loads(rest.splitlines()[-1])
    assert (process.returncode, last["error"]) == (1, "cancelled"), (rest, stderr)
    assert [p.name for p in root.iterdir()] == ["0.0.9"]


class socket_that_never_answers:
    """A local index URL that accepts connections and never answers, so that pip waits."""

    def __enter__(self) -> str:
        import socket

        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        return f"http://127.0.0.1:{self.server.getsockname()[1]}/simple"

    def __exit__(self, *exc: object) -> None:
        self.server.close()


def test_an_install_without_venv_asks_for_another_python(tmp_path: Path):
    """Debian's python3 without python3-venv: exit 3, so that the editor tries its next Python."""
    bootstrap = extension(tmp_path)
    build_wheel(bootstrap.parent, "0.1.0")
    blocker = tmp_path / "no_venv"
    blocker.mkdir()
    (blocker / "ensurepip.py").write_text("raise ImportError('ensurepip is disabled here')\n")
    ran = run(bootstrap, "install", "--root", tmp_path / "servers", PYTHONPATH=str(blocker))
    assert ran.code == 3, ran.lines
    assert ran.last["error"].endswith("cannot make a virtualenv (ensurepip is disabled here)"), ran.last
    assert ran.last["fix"] == PYTHON_HINT
    assert not (tmp_path / "servers").exists()


def test_the_real_wheel_installs_as_the_extension_carries_it(built_wheel: Path, tmp_path: Path):
    """`make dist`'s wheel beside the bootstrap, as `make vsix` packs them; pip gets its dependencies
    from the package index (its cache)."""
    bootstrap = extension(tmp_path)
    shutil.copy(built_wheel, bootstrap.parent)
    root = tmp_path / "storage" / "server"
    ran = run(bootstrap, "install", "--root", root, timeout=900, PIP_NO_INDEX=None)
    assert ran.code == 0, ran.lines[-15:]
    version = built_wheel.name.split("-")[1]
    assert ran.last["command"] == [str(root / version / "bin" / "llama-lsp")]
    found = run(bootstrap, "locate", "--root", root).last
    assert (found["source"], found["version"], found["update"]) == ("installed", version, None)
