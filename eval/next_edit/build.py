"""The next-edit eval's cases (issue 42): real commits of public repositories, rebuilt from their mirrors.

A case is one file of one commit, read from `git diff -U0 <parent> <commit> -- <path>`:

- next-edit: the file's diff has exactly two hunks, each small (at most MAX_HUNK_LINES lines removed and
  as many added) and not whitespace, comments or blank lines alone, at most MAX_DISTANCE unchanged lines
  apart. The first hunk in file order is the user's edit; the second is the edit expected next.
- no-suggestion: the file's diff is exactly one such hunk: after it, the right answer is nothing.

Commits are taken from REPOS' histories between SINCE and BEFORE (committer date), not merges, touching
at most MAX_FILES files, one case per commit and one per subject (a cherry-pick repeats its subject).
Files are modified (not added, deleted or renamed) .py files, and .go files in the one Go repository; a
file over MAX_FILE_LINES lines, generated, vendored, test data, not UTF-8, holding "\\r" or NUL, or (for
Python) not parsing at the parent or the commit, is left out. Per repository and kind, PER_REPO cases
are taken at evenly spaced positions in date order, so the set is stable and no hunk is chosen by hand.
One stratum is fixed in size: REPEATS next-edit cases (at most REPEATS_PER_REPO per repository, evenly
spaced over all repositories' candidates) whose second hunk repeats the first's substitution
(substitution.py: renames, the same change made twice), the rest of a repository's next-edit cases
from its other candidates; `--candidates` prints how common each kind is.

Only references are committed (cases.json: repository, commit, parent, date, path, subject, the hunks'
headers). The texts are rebuilt from git: the file at the parent and at the commit, the hunks checked
to turn one into the other. Each case goes to build/eval-next-edit/cases/<id>.json:

    id, kind, repo, commit, parent, date, subject, language, path, repeat
    before      the file at the parent
    user_edit   {start_line, end_line (exclusive), new_text}: the first hunk, applied to `before`
    after_user  `before` with the user's edit
    cursor      {line, character}: where the user's typing ended (UTF-16 column)
    expected    the file at the commit (both hunks), or null: no suggestion is right
    next_edit   {start_line, end_line, new_text}: the second hunk, applied to `after_user` (or null)
    distance    unchanged lines between the two hunks (0 for no-suggestion)

    .venv/bin/python eval/next_edit/build.py               # cases.json -> build/eval-next-edit/cases/
    .venv/bin/python eval/next_edit/build.py --choose      # mine the mirrors again: writes cases.json
    .venv/bin/python eval/next_edit/build.py --candidates  # how many candidates of each kind, per repo

The mirrors are eval/chat's (eval/chat/snapshots.py: <mirrors>/<owner>+<name>/repo, from the agent
tool `fetch` with "github:<owner>/<name>" or `git clone --mirror`); --mirrors or LLAMA_LSP_MIRRORS
says where they are.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import re
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "chat"))
sys.path.insert(0, str(HERE))

from snapshots import MIRRORS, MissingMirror, Repo  # noqa: E402  (eval/chat/snapshots.py)
from substitution import at_boundary, differing_span, repeats, substitution  # noqa: E402
from textedit import line_range_offsets, position, split_lines  # noqa: E402

CASES = HERE / "cases.json"
OUT = ROOT / "build" / "eval-next-edit" / "cases"

# owner/name -> the language of the files its cases come from
REPOS: dict[str, str] = {
    "pallets/flask": "python",
    "pallets/click": "python",
    "pallets/jinja": "python",
    "psf/black": "python",
    "psf/requests": "python",
    "encode/httpx": "python",
    "python-attrs/attrs": "python",
    "tox-dev/tox": "python",
    "spf13/cobra": "go",
}
SUFFIXES = {"python": ".py", "go": ".go"}
SINCE, BEFORE = "2019-01-01", "2024-06-01"  # Python 3 code; newer commits are kept for independent checks
MAX_FILES = 5  # more: a mass refactoring or a merge-like commit
MAX_FILE_LINES = 2000
MAX_HUNK_LINES = 6  # removed, and added, per hunk
MAX_DISTANCE = 60  # unchanged lines between the two hunks of a next-edit case
PER_REPO = {
    "python": {"next-edit": 7, "no-suggestion": 3},
    "go": {"next-edit": 5, "no-suggestion": 4},
}
REPEATS = 10
REPEATS_PER_REPO = 2

COMMENT_PREFIXES = {"python": ("#",), "go": ("//", "/*", "*")}
# Vendored code, test data and generated modules: not code anyone edits by hand in that repository.
SKIPPED_PATH = re.compile(
    r"(^|/)(vendor|_vendor|vendored|third_party|extern|blib2to3|packages|testdata|data|fixtures|"
    r"generated)/|_pb2\.py$|\.pb\.go$|(^|/)zz_generated"
)
GENERATED = re.compile(r"auto-?generated|generated by|code generated|do not edit", re.IGNORECASE)
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
STORED_HEADER = re.compile(r"-(\d+),(\d+) \+(\d+),(\d+)")
# The diff as git makes it by default, pinned: a user's diff settings must not change the hunks.
DIFF_OPTIONS = (
    "-U0",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "--diff-algorithm=myers",
    "--indent-heuristic",
)


# ---- hunks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hunk:
    """One hunk of a -U0 diff, numbered as git's header numbers it (1-based; a side with no lines
    names the line after which the other side's lines go)."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    removed: tuple[str, ...] = ()  # the lines, without their "\n" (from the diff; not stored)
    added: tuple[str, ...] = ()

    @property
    def start(self) -> int:
        """The first line it replaces in the old file, 0-based (for an insertion: the line it goes before)."""
        return self.old_start - 1 if self.old_lines else self.old_start

    @property
    def end(self) -> int:
        return self.start + self.old_lines

    @property
    def new_first(self) -> int:
        """Its first line in the new file, 0-based."""
        return self.new_start - 1 if self.new_lines else self.new_start

    def header(self) -> str:
        """As cases.json stores it: git's header without its @@ and with every count ("-30,0 +31,1")."""
        return f"-{self.old_start},{self.old_lines} +{self.new_start},{self.new_lines}"

    @classmethod
    def from_header(cls, header: str) -> Hunk:
        match = STORED_HEADER.fullmatch(header)
        if match is None:
            raise ValueError(f"not a hunk's header: {header!r}")
        old_start, old_lines, new_start, new_lines = (int(number) for number in match.groups())
        return cls(old_start, old_lines, new_start, new_lines)


def parse_diff(diff: str) -> dict[str, list[Hunk]]:
    """The hunks of a `git diff -U0` per file (its path in the new tree)."""
    files: dict[str, list[Hunk]] = {}
    hunks: list[Hunk] | None = None
    current: dict[str, Any] | None = None

    def close() -> None:
        if current is not None and hunks is not None:
            old_start, old_lines, new_start, new_lines = current["header"]
            removed, added = tuple(current["removed"]), tuple(current["added"])
            hunks.append(Hunk(old_start, old_lines, new_start, new_lines, removed, added))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            close()
            current, hunks = None, None
        elif line.startswith("+++ ") and current is None:
            path = line[4:]
            hunks = files.setdefault(path[2:] if path.startswith("b/") else path, [])
        elif line.startswith("@@ ") and hunks is not None:
            close()
            match = HUNK_HEADER.match(line)
            if match is None:
                raise ValueError(f"not a hunk header: {line!r}")
            numbers = [int(match[1]), int(match[2] or 1), int(match[3]), int(match[4] or 1)]
            current = {"header": numbers, "removed": [], "added": []}
        elif current is not None and line[:1] in ("-", "+"):
            current["removed" if line[0] == "-" else "added"].append(line[1:])
    close()
    return files


def apply_hunks(before: str, after: str, hunks: Sequence[Hunk]) -> str:
    """`before` with each hunk's old lines replaced by its new lines, taken from `after`."""
    old, new = split_lines(before), split_lines(after)
    result: list[str] = []
    at = 0
    for hunk in sorted(hunks, key=lambda h: h.start):
        if hunk.start < at:
            raise ValueError(f"overlapping hunks at line {hunk.start + 1}")
        result += old[at : hunk.start] + new[hunk.new_first : hunk.new_first + hunk.new_lines]
        at = hunk.end
    return "".join(result + old[at:])


def is_code_line(line: str, language: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(COMMENT_PREFIXES[language])


def substantive(hunk: Hunk, language: str) -> bool:
    """Small, and more than whitespace, comments or blank lines."""
    if hunk.old_lines > MAX_HUNK_LINES or hunk.new_lines > MAX_HUNK_LINES:
        return False
    if "".join("".join(hunk.removed).split()) == "".join("".join(hunk.added).split()):
        return False  # whitespace alone
    return any(is_code_line(line, language) for line in (*hunk.removed, *hunk.added))


def distance(first: Hunk, second: Hunk) -> int:
    """Unchanged lines between two hunks, in the old file."""
    return second.start - first.end


def kind_of(hunks: Sequence[Hunk], language: str) -> str | None:
    """ "next-edit", "no-suggestion", or None when the file's hunks make no case."""
    if not all(substantive(hunk, language) for hunk in hunks):
        return None
    if len(hunks) == 1:
        return "no-suggestion"
    if len(hunks) == 2 and 0 <= distance(*hunks) <= MAX_DISTANCE:
        return "next-edit"
    return None


def hunk_texts(hunk: Hunk) -> tuple[str, str]:
    return "".join(f"{line}\n" for line in hunk.removed), "".join(f"{line}\n" for line in hunk.added)


def second_repeats_first(hunks: Sequence[Hunk]) -> bool:
    first, second = (hunk_texts(hunk) for hunk in hunks)
    return repeats(substitution(*first), *second)


# ---- mining the mirrors --------------------------------------------------------------------------


@dataclass
class Commit:
    commit: str
    parent: str
    date: str  # committer date, UTC, ISO 8601
    subject: str
    changes: list[tuple[str, str]]  # (status, path) of every file it touches


@dataclass
class Candidate:
    id: str
    kind: str
    repo: str
    commit: str
    parent: str
    date: str
    subject: str
    language: str
    path: str
    hunks: list[
        str
    ]  # git's headers, every count written: "-<old start>,<old lines> +<new start>,<new lines>"
    repeat: bool  # the second hunk repeats the first's substitution


def utc_date(timestamp: str) -> str:
    """A Unix time as ISO 8601 in UTC (git's %cI can carry an offset Python does not read: +518:00)."""
    when = datetime.datetime.fromtimestamp(int(timestamp), datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def history(repo: Repo, since: str = SINCE, before: str = BEFORE) -> list[Commit]:
    """Non-merge commits of HEAD's history committed in [since, before), oldest first."""
    log = repo.git(
        "log", "--no-merges", "--no-renames", "--name-status", "--format=%x00%H %P%x09%ct%x09%s", "HEAD"
    ).stdout
    found = []
    for block in log.split("\0")[1:]:
        head, *rows = block.strip("\n").split("\n")
        shas, date, subject = head.split("\t", 2)
        commit, *parents = shas.split()
        date = utc_date(date)
        if len(parents) != 1 or not since <= date < before:
            continue
        changes = [(row.split("\t")[0], row.split("\t")[-1]) for row in rows if row.strip()]
        found.append(Commit(commit, parents[0], date, subject, changes))
    return sorted(found, key=lambda c: (c.date, c.commit))


def file_text(repo: Repo, commit: str, path: str) -> str | None:
    """The file as text, or None when it is not text these cases can use (binary, not UTF-8, "\\r")."""
    data = subprocess.run(
        ["git", f"--git-dir={repo.git_dir}", "cat-file", "blob", f"{commit}:{path}"],
        capture_output=True,
        check=True,
    ).stdout
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text or "\r" in text else text


def usable(text: str | None, language: str) -> bool:
    if text is None or len(split_lines(text)) > MAX_FILE_LINES:
        return False
    if GENERATED.search("".join(split_lines(text)[:10])):
        return False
    if language == "python":
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in old code still parse
                ast.parse(text)
        except (SyntaxError, ValueError):
            return False
    return True


def candidates(
    repo: Repo, language: str, since: str = SINCE, before: str = BEFORE
) -> Iterable[tuple[Candidate, Hunk, Hunk | None]]:
    """Every commit's case, if it makes one, oldest first: next-edit preferred over no-suggestion
    within a commit, then the first path in order."""
    suffix = SUFFIXES[language]
    short = repo.name.split("/")[1]
    subjects: set[str] = set()
    for commit in history(repo, since, before):
        if len(commit.changes) > MAX_FILES or commit.subject.lower() in subjects:
            continue
        paths = sorted(
            path
            for status, path in commit.changes
            if status == "M" and path.endswith(suffix) and not SKIPPED_PATH.search(path)
        )
        if not paths:
            continue
        diff = repo.git("diff", *DIFF_OPTIONS, commit.parent, commit.commit, "--", *paths).stdout
        by_kind: dict[str, tuple[str, list[Hunk]]] = {}
        for path, hunks in sorted(parse_diff(diff).items()):
            kind = kind_of(hunks, language)
            if kind is None or kind in by_kind:
                continue
            before_text = file_text(repo, commit.parent, path)
            after_text = file_text(repo, commit.commit, path)
            if not (usable(before_text, language) and usable(after_text, language)):
                continue
            assert before_text is not None and after_text is not None
            if apply_hunks(before_text, after_text, hunks) != after_text:
                raise SystemExit(
                    f"{repo.name} {commit.commit} {path}: the hunks do not make the commit's file"
                )
            by_kind[kind] = (path, hunks)
        for kind in ("next-edit", "no-suggestion"):
            if kind in by_kind:
                path, hunks = by_kind[kind]
                subjects.add(commit.subject.lower())
                label = "next" if kind == "next-edit" else "single"
                yield (
                    Candidate(
                        id=f"{short}-{label}-{commit.commit[:8]}",
                        kind=kind,
                        repo=repo.name,
                        commit=commit.commit,
                        parent=commit.parent,
                        date=commit.date,
                        subject=commit.subject,
                        language=language,
                        path=path,
                        hunks=[hunk.header() for hunk in hunks],
                        repeat=kind == "next-edit" and second_repeats_first(hunks),
                    ),
                    hunks[0],
                    hunks[1] if len(hunks) > 1 else None,
                )
                break


def evenly(found: Sequence[Candidate], n: int) -> list[Candidate]:
    """n of `found` at evenly spaced positions (all of them when there are fewer)."""
    if len(found) <= n:
        return list(found)
    if n == 1:
        return [found[0]]
    return [found[round(i * (len(found) - 1) / (n - 1))] for i in range(n)]


def choose(found: dict[str, list[Candidate]]) -> list[Candidate]:
    """The cases: per repository PER_REPO of each kind, REPEATS of the next-edit cases from the
    repeat stratum (over all repositories), the rest from the other candidates."""
    repeat_pool = sorted(
        (c for cs in found.values() for c in cs if c.repeat), key=lambda c: (c.date, c.commit)
    )
    taken_repeats: list[Candidate] = []
    per_repo: Counter[str] = Counter()
    for i in range(min(REPEATS, len(repeat_pool))):
        position = round(i * len(repeat_pool) / REPEATS)  # evenly spaced; a full repository gives way
        for candidate in repeat_pool[position:] + repeat_pool[:position]:
            if candidate not in taken_repeats and per_repo[candidate.repo] < REPEATS_PER_REPO:
                taken_repeats.append(candidate)
                per_repo[candidate.repo] += 1
                break
    chosen: list[Candidate] = []
    for repo, cs in found.items():
        wanted = PER_REPO[REPOS[repo]]
        repeat_here = [c for c in taken_repeats if c.repo == repo]
        others = [c for c in cs if c.kind == "next-edit" and not c.repeat]
        singles = [c for c in cs if c.kind == "no-suggestion"]
        chosen += repeat_here
        chosen += evenly(others, wanted["next-edit"] - len(repeat_here))
        chosen += evenly(singles, wanted["no-suggestion"])
    return sorted(chosen, key=lambda c: (list(REPOS).index(c.repo), c.kind, c.date, c.commit))


# ---- building a case -----------------------------------------------------------------------------


def build_case(reference: dict[str, Any], before: str, after: str) -> dict[str, Any]:
    """The case's texts from the file at the parent and at the commit, and its hunks' headers."""
    hunks = [Hunk.from_header(header) for header in reference["hunks"]]
    if apply_hunks(before, after, hunks) != after:
        raise ValueError(f"{reference['id']}: its hunks do not turn the parent's file into the commit's")
    first = hunks[0]
    new_lines = split_lines(after)
    new_text = "".join(new_lines[first.new_first : first.new_first + first.new_lines])
    old_lines = split_lines(before)
    old_text = "".join(old_lines[first.start : first.end])
    after_user = "".join(old_lines[: first.start]) + new_text + "".join(old_lines[first.end :])
    edit_at, _ = line_range_offsets(after_user, first.start, first.start + first.new_lines)
    case: dict[str, Any] = {
        key: reference[key]
        for key in ("id", "kind", "repo", "commit", "parent", "date", "subject", "language", "path", "repeat")
    }
    case |= {
        "before": before,
        "user_edit": {"start_line": first.start, "end_line": first.end, "new_text": new_text},
        "after_user": after_user,
        "cursor": position(after_user, edit_at + typing_end(old_text, new_text)),
        "expected": None,
        "next_edit": None,
        "distance": 0,
    }
    if reference["kind"] == "next-edit":
        second = hunks[1]
        shift = first.new_lines - first.old_lines
        case["expected"] = after
        case["next_edit"] = {
            "start_line": second.start + shift,
            "end_line": second.end + shift,
            "new_text": "".join(new_lines[second.new_first : second.new_first + second.new_lines]),
        }
        case["distance"] = distance(first, second)
    return case


def typing_end(old_text: str, new_text: str) -> int:
    """Where, in `new_text`, a user who typed the change from `old_text` stops: the end of what
    differs, carried to the end of the word it stops in (after a renamed word, not at the end of its
    line, nor inside it where old and new names end alike); at the end of a line they wrote, before
    its "\\n"."""
    start, _, new_end = differing_span(old_text, new_text)
    while not at_boundary(new_text, new_end):
        new_end += 1
    if new_end > start and new_text[new_end - 1] == "\n":
        new_end -= 1
    return new_end


def rebuild(references: Sequence[dict[str, Any]], out: Path, mirrors: Path) -> int:
    """Writes every case's file; the number written."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for reference in references:
        repo = Repo(reference["repo"], mirrors)
        repo.check(reference["commit"])
        before = file_text(repo, reference["parent"], reference["path"])
        after = file_text(repo, reference["commit"], reference["path"])
        if before is None or after is None:
            raise SystemExit(f"{reference['id']}: {reference['path']} is not text the cases can use")
        case = build_case(reference, before, after)
        (out / f"{case['id']}.json").write_text(json.dumps(case, indent=1) + "\n")
    return len(references)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--choose", action="store_true", help="mine the mirrors again and write cases.json")
    parser.add_argument(
        "--candidates",
        action="store_true",
        help="print every candidate's counts per repository; write nothing",
    )
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help=f"where the mirrors are ({MIRRORS})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the cases go ({OUT})")
    args = parser.parse_args()
    try:
        if args.choose or args.candidates:
            found: dict[str, list[Candidate]] = {}
            for name, language in REPOS.items():
                repo = Repo(name, args.mirrors)
                repo.check()
                found[name] = [candidate for candidate, _, _ in candidates(repo, language)]
                kinds = [c.kind for c in found[name]]
                print(
                    f"{name:20} next-edit {kinds.count('next-edit'):4} "
                    f"(repeats {sum(c.repeat for c in found[name]):3})  "
                    f"no-suggestion {kinds.count('no-suggestion'):4}",
                    file=sys.stderr,
                )
            if args.candidates:
                return 0
            chosen = choose(found)
            CASES.write_text(json.dumps([asdict(c) for c in chosen], indent=1) + "\n")
            print(f"wrote {len(chosen)} references to {CASES.relative_to(ROOT)}")
        references = json.loads(CASES.read_text())
        written = rebuild(references, args.out, args.mirrors)
    except MissingMirror as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"wrote {written} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
