"""What `make bench` and the evals write into docs/performance.md and docs/quality.md.

Each measurement owns one section of a doc, between a `<!-- begin KEY ... -->` and an `<!-- end KEY -->`
comment: a heading, one line saying where the figures come from (date, commit, machine, threads, model,
what lies behind each figure), the figures as markdown tables, and a sentence or two on what is measured.
A run replaces only the sections it measured; the rest of the file, and every other section, stays as
it is. A section the file does not hold yet goes after its last section.

The docs are for reading, the console output for working: a run prints its details as before and
writes only its summary here.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE = ROOT / "docs" / "performance.md"
QUALITY = ROOT / "docs" / "quality.md"
WRITER = "harness/report.py"

_KEY = re.compile(r"^[a-z0-9][a-z0-9._/-]*$")


def key_part(name: str) -> str:
    """A model's name or path (or any label) as a part of a section's key: lower case, `-` for the rest."""
    return re.sub(r"[^a-z0-9._-]+", "-", model_name(name).lower()).strip("-") or "x"


def model_name(model: str | Path) -> str:
    """A catalogue name as it is; a GGUF path as its file's name without the suffix."""
    return Path(model).name.removesuffix(".gguf")


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (Linux), else what the platform module knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> str:
    return f"{cpu_model()}, {os.cpu_count() or '?'} cores"


def commit(root: Path = ROOT) -> str:
    """HEAD's short hash, marked when tracked files differ from it (what ran is then not that commit)."""

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", *arguments], cwd=root, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} with uncommitted changes" if dirty else head


@dataclass(frozen=True)
class Run:
    """Where a section's figures come from."""

    date: str  # YYYY-MM-DD (UTC)
    commit: str
    machine: str
    threads: str  # the threads the measured side ran with
    model: str
    figures: str = ""  # what lies behind each figure: "medians of 5", "one run"
    notes: str = ""  # conditions worth knowing: a subset of the cases, another run beside it

    @classmethod
    def now(cls, *, threads: int | str, model: str | Path, figures: str = "", notes: str = "") -> Run:
        """This run, on this machine, at this checkout."""
        date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        if isinstance(threads, int):
            threads = "the server's default" if threads == 0 else str(threads)
        return cls(date, commit(), machine(), threads, model_name(model), figures, notes)

    def line(self) -> str:
        parts = [
            self.date,
            f"commit {self.commit}",
            self.machine,
            f"threads: {self.threads}",
            f"model: {self.model}",
        ]
        parts += [text for text in (self.figures, self.notes) if text]
        return "Run: " + " · ".join(parts)


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]

    def markdown(self) -> str:
        width = len(self.header)
        for row in self.rows:
            if len(row) != width:
                raise ValueError(f"a row of {len(row)} cells under a header of {width}: {row!r}")
        lines = [_row(self.header), "|" + "---|" * width]
        lines += [_row(row) for row in self.rows]
        return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


@dataclass(frozen=True)
class Section:
    key: str  # one section per key in a doc: `bench/versus/qwen2.5-coder-0.5b`
    title: str
    run: Run
    tables: Sequence[Table]
    about: str = ""  # what is measured and how: a sentence or two, never a story of runs
    lines: Sequence[str] = field(default_factory=tuple)  # plain lines after the tables (lists of names)

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"not a section key: {self.key!r}")

    def markdown(self, made_by: str) -> str:
        parts = [begin_marker(self.key, made_by), f"## {self.title}", "", self.run.line(), ""]
        for table in self.tables:
            parts += [table.markdown(), ""]
        parts += [*self.lines]
        if self.lines:
            parts.append("")
        if self.about:
            parts += [self.about, ""]
        parts.append(end_marker(self.key))
        return "\n".join(parts)


def begin_marker(key: str, made_by: str) -> str:
    return f"<!-- begin {key}: written by {made_by} ({WRITER}) -->"


def end_marker(key: str) -> str:
    return f"<!-- end {key} -->"


def _block(key: str) -> re.Pattern[str]:
    return re.compile(
        rf"^<!-- begin {re.escape(key)}: .*?-->\n.*?^{re.escape(end_marker(key))}$",
        flags=re.MULTILINE | re.DOTALL,
    )


def keys(text: str) -> list[str]:
    """The sections a doc holds, in order."""
    return re.findall(r"^<!-- begin (\S+): ", text, flags=re.MULTILINE)


def replace_section(text: str, section: Section, made_by: str) -> str:
    """text with section's block replaced; a section text lacks goes after its last section (before what
    is written by hand below them), or at the end of a text with none. Nothing else changes."""
    body = section.markdown(made_by)
    found = _block(section.key).findall(text)
    if len(found) > 1:
        raise ValueError(f"{len(found)} sections named {section.key!r}")
    if found:
        return _block(section.key).sub(lambda _: body, text, count=1)
    ends = list(re.finditer(r"^<!-- end \S+ -->$", text, flags=re.MULTILINE))
    if not ends:
        return text.rstrip("\n") + "\n\n" + body + "\n"
    at = ends[-1].end()
    return text[:at] + "\n\n" + body + text[at:]


def write(path: Path, sections: Sequence[Section], made_by: str) -> None:
    """Replaces each section in the doc at path, which must exist (its title and introduction are its own)."""
    if not sections:
        return
    text = path.read_text(encoding="utf-8")
    for section in sections:
        text = replace_section(text, section, made_by)
    path.write_text(text, encoding="utf-8")
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"wrote {', '.join(s.key for s in sections)} in {shown}", flush=True)


def ms(value: float) -> str:
    return f"{value:,.0f} ms"


def ratio(value: float) -> str:
    return f"{value:.2f}x"
