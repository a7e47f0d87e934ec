"""How eval/chat/cases.json was chosen: commits of public repositories, picked by rules, not by hand.

For each repository in REPOS, the commits made between SINCE and BEFORE (commit date) that
- are not merges,
- modify (M, not add, delete or rename) one or two non-test source .py files (tests, docs, examples,
  scripts, setup.py, conftest.py, noxfile.py are not source; other files may change too),
- have a subject that does not look like housekeeping (SKIP: bump, release, docs, typo, CI, lint,
  typing, refactor, requirements, ...) and that does not name one of those files,
are candidates, oldest first, one per subject (a cherry-picked commit has the same subject). CASES_PER_REPO
of them are taken at evenly spaced positions in that list; a taken commit whose subject, read with its
diff, does not describe a behaviour change is in REJECTED with the reason, and the next candidate
takes its place. The gold answer is the commit's changed source files; the workspace is the tree at
its parent.

    .venv/bin/python eval/chat/choose.py               # writes eval/chat/cases.json
    .venv/bin/python eval/chat/choose.py --candidates  # prints every candidate instead

Needs the mirrors (eval/chat/README.md). Only references are stored: no file of the repositories.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from snapshots import Repo, mirror

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.json"
REPOS = ("tox-dev/tox", "psf/black", "pallets/flask")
SINCE, BEFORE = "2021-01-01", "2023-06-01"
CASES_PER_REPO = 10
QUESTION = (
    'In this project, which source file implements what this change describes: "{description}"? '
    "Look in the workspace, then answer with the file's path."
)

SKIP = re.compile(
    r"\b(bump|release[sd]?|version|docs?|documentation|docstrings?|typos?|ci|changelog|pre-commit|readme|"
    r"lint(ing)?|mypy|mypyc|flake8|pylint|tests?|format(ting)?|refactor(ing)?|cleanup|clean up|revert|"
    r"merge|deps|dependabot|requirements|dependencies|type hints?|typing|types|annotations?|style|"
    r"comments?|spelling|news|coverage|backport)\b",
    re.IGNORECASE,
)
NOT_SOURCE = re.compile(
    r"(^|/)(tests?|testing|docs|examples|scripts|tasks|\.github)/"
    r"|(^|/)(test_[^/]*|[^/]*_test|conftest|setup|noxfile|conf)\.py$"
)
PULL_REQUEST = re.compile(r"(\s*\(#\d+\))+$")  # GitHub's "(#1234)" after a squashed pull request

# Taken at first, then set aside after reading the subject with its diff: (commit prefix, why).
REJECTED: dict[str, str] = {
    "ba84be00": "the subject is garbled; it does not say what changed",
    "85520e74": "a repeated word in a help text",
    "55cc1ea8": "a refactoring (changelog: misc); nothing changes for the user",
    "06ccb88b": "the gallery script's links to the master branch; not the tool's behaviour",
    "aff21fd8": "a docstring",
    "89475e5d": "re-exports for type checkers (`import x as x`)",
    "1232d698": "imports moved into the functions that use them; nothing changes for the user",
    "f91a685d": "the source file's change is a coverage pragma; the change itself is in setup.cfg",
    "8cb95067": "type annotations only",
    "41c7eb4a": "a simplification of a named function; the subject describes no behaviour",
    "72cae9ce": "a docstring's backtick",
}


@dataclass
class Case:
    id: str
    repo: str
    commit: str
    parent: str
    date: str
    subject: str
    gold: list[str]
    question: str


def candidates(repo: str, max_files: int = 2) -> list[Case]:
    """The repository's commits that follow the rules, modifying 1 to max_files source files, oldest
    first, one per subject."""
    log = subprocess.run(
        [
            "git",
            f"--git-dir={mirror(repo)}",
            "log",
            "--no-merges",
            f"--since={SINCE}",
            f"--before={BEFORE}",
            "--format=@@%H %P%x09%cs%x09%s",
            "--name-status",
            "--no-renames",
            "HEAD",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: list[Case] = []
    seen: set[str] = set()
    for block in reversed(log.split("@@")[1:]):
        head, *changes = block.strip().split("\n")
        shas, date, subject = head.split("\t", 2)
        commit, *parents = shas.split()
        rows = [line.split("\t") for line in changes if line.strip()]
        source = [row for row in rows if row[-1].endswith(".py") and not NOT_SOURCE.search(row[-1])]
        if len(parents) != 1 or not 1 <= len(source) <= max_files or any(row[0] != "M" for row in source):
            continue
        gold = sorted(row[-1] for row in source)
        if SKIP.search(subject) or any(Path(path).name in subject for path in gold):
            continue
        description = PULL_REQUEST.sub("", subject).strip()
        if description.lower() in seen:
            continue
        seen.add(description.lower())
        name = repo.split("/")[1]
        found.append(
            Case(
                id=f"{name}-{commit[:8]}",
                repo=repo,
                commit=commit,
                parent=parents[0],
                date=date,
                subject=subject,
                gold=gold,
                question=QUESTION.format(description=description),
            )
        )
    return found


def choose(found: list[Case], n: int, rejected: tuple[str, ...] = tuple(REJECTED)) -> list[Case]:
    """n candidates at evenly spaced positions; a rejected one (by commit prefix) gives way to the next
    one not taken."""
    if len(found) < n:
        raise SystemExit(f"only {len(found)} candidates, fewer than {n}")
    taken: list[int] = []
    for i in range(n):
        position = round(i * (len(found) - 1) / (n - 1)) if n > 1 else 0
        while position in taken or found[position].commit.startswith(rejected):
            position = (position + 1) % len(found)
        taken.append(position)
    return [found[position] for position in sorted(taken)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", action="store_true", help="print every candidate; write nothing")
    args = parser.parse_args()
    cases: list[Case] = []
    for name in REPOS:
        Repo(name).check()
        found = candidates(name)
        if args.candidates:
            for case in found:
                print(f"{case.date} {case.commit[:10]} {case.subject[:90]} | {' '.join(case.gold)}")
            print(f"{name}: {len(found)} candidates\n", file=sys.stderr)
            continue
        cases += choose(found, CASES_PER_REPO)
    if not args.candidates:
        CASES.write_text(json.dumps([asdict(case) for case in cases], indent=2) + "\n")
        print(f"wrote {len(cases)} cases to {CASES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
