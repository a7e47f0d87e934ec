"""How eval/codebase/cases.json was chosen: eval/chat/choose.py's rules, allowing up to three files.

A query is a commit's subject; the gold answer is the non-test source files the commit changed; the
workspace is the tree at its parent. The rules are eval/chat/choose.py's, imported from it: commits
made between its SINCE and BEFORE (2021-01 to 2023-05), no merges, a subject that is not housekeeping
(its SKIP) and does not name a changed file, one per subject, and its REJECTED set aside. The one
generalisation, here: a commit may modify one to MAX_FILES non-test source .py files, not one or two.

Per repository, the chat eval's cases of that repository are kept, so that both evals can be read
on the same commits, and the rest of CASES_PER_REPO are taken by chat's rule (evenly spaced in
time) among the remaining candidates. A repository without chat cases (EXTRA_REPOS) gets all
CASES_PER_REPO that way. `choose` is chat.choose with this file's REJECTED added to chat's.

    .venv/bin/python eval/codebase/queries.py               # writes eval/codebase/cases.json
    .venv/bin/python eval/codebase/queries.py --candidates  # prints every candidate instead

Needs the mirrors (eval/chat/README.md). Only references are stored: no file of the repositories.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "chat"))

import choose as chat  # noqa: E402  (eval/chat/choose.py)
from snapshots import Repo  # noqa: E402

CASES = HERE / "cases.json"
REPOS = (*chat.REPOS, "encode/httpx")
EXTRA_REPOS = ("encode/httpx",)
CASES_PER_REPO = 35
MAX_FILES = 3

# Taken at first, then set aside after reading the subject with its diff, as in chat's REJECTED
# (which chat.choose honours too): (commit prefix, why).
REJECTED: dict[str, str] = {
    "90f6d7e0": "a missing word in a comment",
    "caa3fcc2": "a refactoring; the subject names no behaviour",
    "9dfcb90c": "a docstring",
    "83d358d2": "a refactoring (dicts are ordered); nothing changes for the user",
    "4870cb5a": "docstrings",
    "75a13a15": "a type checker's workaround removed; nothing changes for the user",
    "ed199957": "an unused attribute removed; nothing changes for the user",
    "4cc9ceac": "a repeated word in a comment",
    "a23f521f": "a refactoring; the subject names no behaviour",
    "51141f1a": "a renaming; the subject names no behaviour",
    "89c42a00": "a renaming; the subject names no behaviour",
}


def candidates(repo: str, max_files: int = MAX_FILES) -> list[chat.Case]:
    """chat.candidates with 1..max_files source files instead of 1..2: oldest first, one per subject."""
    log = (
        Repo(repo)
        .git(
            "log",
            "--no-merges",
            f"--since={chat.SINCE}",
            f"--before={chat.BEFORE}",
            "--format=@@%H %P%x09%cs%x09%s",
            "--name-status",
            "--no-renames",
            "HEAD",
        )
        .stdout
    )
    found: list[chat.Case] = []
    seen: set[str] = set()
    for block in reversed(log.split("@@")[1:]):
        head, *changes = block.strip().split("\n")
        shas, date, subject = head.split("\t", 2)
        commit, *parents = shas.split()
        rows = [line.split("\t") for line in changes if line.strip()]
        source = [row for row in rows if row[-1].endswith(".py") and not chat.NOT_SOURCE.search(row[-1])]
        if len(parents) != 1 or not 1 <= len(source) <= max_files or any(row[0] != "M" for row in source):
            continue
        gold = sorted(row[-1] for row in source)
        if chat.SKIP.search(subject) or any(Path(path).name in subject for path in gold):
            continue
        description = chat.PULL_REQUEST.sub("", subject).strip()
        if description.lower() in seen:
            continue
        seen.add(description.lower())
        found.append(
            chat.Case(
                id=f"{repo.split('/')[1]}-{commit[:8]}",
                repo=repo,
                commit=commit,
                parent=parents[0],
                date=date,
                subject=subject,
                gold=gold,
                question=chat.QUESTION.format(description=description),
            )
        )
    return found


def choose(found: list[chat.Case], n: int) -> list[chat.Case]:
    """chat.choose, setting aside this file's REJECTED as well as chat's: n candidates at evenly
    spaced positions; a rejected one gives way to the next one not taken."""
    if len(found) < n:
        raise SystemExit(f"only {len(found)} candidates, fewer than {n}")
    rejected = (*chat.REJECTED, *REJECTED)
    taken: list[int] = []
    for i in range(n):
        position = round(i * (len(found) - 1) / (n - 1)) if n > 1 else 0
        while position in taken or found[position].commit.startswith(rejected):
            position = (position + 1) % len(found)
        taken.append(position)
    return [found[position] for position in sorted(taken)]


def pick(repo: str, found: list[chat.Case], chat_commits: set[str]) -> list[chat.Case]:
    """The chat cases of `repo`, and chat.choose's evenly spaced picks among the other candidates."""
    kept = [case for case in found if case.commit in chat_commits]
    missing = chat_commits - {case.commit for case in kept}
    if missing:  # the rules here include chat's, so this means the two have drifted apart
        raise SystemExit(f"{repo}: chat cases that are not candidates here: {sorted(missing)}")
    rest = [case for case in found if case.commit not in chat_commits]
    taken = kept + choose(rest, CASES_PER_REPO - len(kept))
    return sorted(taken, key=found.index)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", action="store_true", help="print every candidate; write nothing")
    args = parser.parse_args()
    chat_cases = json.loads(chat.CASES.read_text())
    cases: list[dict] = []
    for name in REPOS:
        Repo(name).check()
        found = candidates(name)
        if args.candidates:
            for case in found:
                print(f"{case.date} {case.commit[:10]} {case.subject[:90]} | {' '.join(case.gold)}")
            print(f"{name}: {len(found)} candidates\n", file=sys.stderr)
            continue
        chat_commits = {case["commit"] for case in chat_cases if case["repo"] == name}
        for case in pick(name, found, chat_commits):
            cases.append(
                {
                    "id": case.id,
                    "repo": case.repo,
                    "commit": case.commit,
                    "parent": case.parent,
                    "date": case.date,
                    "subject": case.subject,
                    "gold": case.gold,
                    "chat": case.commit in chat_commits,
                }
            )
    if not args.candidates:
        CASES.write_text(json.dumps(cases, indent=2) + "\n")
        print(f"wrote {len(cases)} cases to {CASES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
