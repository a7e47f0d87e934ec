"""Fetch llama.cpp's source for the build and print the directory that holds it.

The source comes from the pinned llama-cpp-python sdist (its vendor/llama.cpp), downloaded by pip with
a required hash into a cache outside the repository, so every build uses the same verified tree and a
second build downloads nothing. Progress goes to stderr; stdout carries only the path for CMake.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

SDIST = "llama-cpp-python==0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_FILE = "llama_cpp_python-0.3.36.tar.gz"
VENDORED = "llama_cpp_python-0.3.36/vendor/llama.cpp"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llama-lsp" / "src"


def pip_command() -> list[str]:
    try:
        import pip  # noqa: F401

        return [sys.executable, "-m", "pip"]
    except ImportError:  # an isolated build environment may lack pip
        for name in ("pip3", "pip"):
            found = shutil.which(name)
            if found:
                return [found]
    sys.exit("fetch_llama_cpp: pip not found; set LLAMA_CPP_DIR to a llama.cpp checkout instead")


def main() -> None:
    # For `llama-lsp --version`: llama.cpp's source has no version of its own.
    if sys.argv[1:] == ["--origin"]:
        print(f"vendor/llama.cpp of {SDIST}")
        return
    root = cache_dir()
    source = root / VENDORED
    if (source / "include" / "llama.h").exists():
        print(source)
        return
    root.mkdir(parents=True, exist_ok=True)
    archive = root / SDIST_FILE
    if not archive.exists():
        requirements = root / "requirements.txt"
        requirements.write_text(f"{SDIST} --hash=sha256:{SDIST_SHA256}\n")
        print(f"fetch_llama_cpp: downloading {SDIST} into {root}", file=sys.stderr)
        subprocess.run(
            [
                *pip_command(),
                "download",
                "--no-deps",
                "--no-binary",
                "llama-cpp-python",
                "--require-hashes",
                "-r",
                str(requirements),
                "-d",
                str(root),
            ],
            check=True,
            stdout=sys.stderr,
        )
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        archive.unlink()
        sys.exit(
            f"fetch_llama_cpp: {archive.name} has SHA-256 {digest}, expected {SDIST_SHA256}; "
            "deleted it, run the build again"
        )
    staging = root / "extracting"
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(VENDORED + "/")]
        tar.extractall(staging, members=members, filter="data")
    (root / VENDORED).parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / VENDORED, ignore_errors=True)
    (staging / VENDORED).rename(root / VENDORED)
    shutil.rmtree(staging, ignore_errors=True)
    print(source)


if __name__ == "__main__":
    main()
