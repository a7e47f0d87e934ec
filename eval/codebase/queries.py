"""How eval/codebase/cases.json was chosen: eval/chat/choose.py's rules, allowing up to three files.

A query is a commit's subject; the gold answer is the non-test source files the commit changed; the
workspace is the tree at its parent. The rules are eval/chat/choose.py's, imported from it: commits
made between its SINCE and BEFORE (2021-01 to 2023-05), no merges, a subject that is not housekeeping
(its SKIP) and does not name a changed file, one per subject, and its REJECTED set aside. The one
generalisation, here: a commit may modify one to MAX_FILES non-test source .py files, not one or two.

Per repository, the chat eval's cases of that repository are kept, so that both evals can be read
on the same commits, and the rest of CASES_PER_REPO are taken by chat's rule (evenly spaced in
time) among the remaining candidates. A repository without chat cases (EXTRA_REPOS) gets all
CASES_PER_REPO that way, with this file's REJECTED set aside as well as chat's.

    .venv/bin/python eval/codebase/queries.py               # writes eval/codebase/cases.json
    .venv/bin/python eval/codebase/queries.py --candidates  # prints every candidate instead

Needs the mirrors (eval/chat/README.md). Only references are stored: no file of the repositories.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "chat"))

import choose as chat  # noqa: E402  (eval/chat/choose.py)
from snapshots import Repo  # noqa: E402

CASES = HERE / "cases.json"
HELD_OUT_CASES = HERE / "cases-held-out.json"
REPOS = (*chat.REPOS, "encode/httpx")
# Repositories whose cases were not looked at while the index's ranking was tuned (`--held-out`): a
# change to the ranking that helps only the cases above shows here as no gain.
HELD_OUT_REPOS = ("pallets/click", "python-attrs/attrs", "pallets/jinja", "psf/requests")
HELD_OUT_PER_REPO = 20
# Subjects that chat's SKIP lets through but that name no change to find: a release ("v2.27.1",
# "Prepare 21.4.0", "Start new cycle"), a grammar fix. Chosen from the held-out candidates' subjects
# before any ranking was measured on them, in place of reading each diff as REJECTED records.
NOT_A_CHANGE = re.compile(
    r"^(v?\d+(\.\d+)+$|prepare \d|start new (development )?cycle|grammar|minor polish|affect vs effect)",
    re.IGNORECASE,
)
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


def pick(repo: str, found: list[chat.Case], chat_commits: set[str]) -> list[chat.Case]:
    """The chat cases of `repo`, and chat.choose's evenly spaced picks among the other candidates."""
    kept = [case for case in found if case.commit in chat_commits]
    missing = chat_commits - {case.commit for case in kept}
    if missing:  # the rules here include chat's, so this means the two have drifted apart
        raise SystemExit(f"{repo}: chat cases that are not candidates here: {sorted(missing)}")
    rest = [case for case in found if case.commit not in chat_commits]
    taken = kept + chat.choose(rest, CASES_PER_REPO - len(kept), (*chat.REJECTED, *REJECTED))
    return sorted(taken, key=found.index)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", action="store_true", help="print every candidate; write nothing")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help=f"the held-out repositories' cases instead, {HELD_OUT_PER_REPO} each, into "
        f"{HELD_OUT_CASES.name}",
    )
    args = parser.parse_args()
    if args.held_out:
        return write_held_out(args.candidates)
    chat_cases = json.loads(chat.CASES.read_text())
    cases: list[dict] = []
    for name in REPOS:
        Repo(name).check()
        found = chat.candidates(name, MAX_FILES)
        if args.candidates:
            for case in found:
                print(f"{case.date} {case.commit[:10]} {case.subject[:90]} | {' '.join(case.gold)}")
            print(f"{name}: {len(found)} candidates\n", file=sys.stderr)
            continue
        chat_commits = {case["commit"] for case in chat_cases if case["repo"] == name}
        for case in pick(name, found, chat_commits):
            cases.append(reference(case) | {"chat": case.commit in chat_commits})
    if not args.candidates:
        CASES.write_text(json.dumps(cases, indent=2) + "\n")
        print(f"wrote {len(cases)} cases to {CASES}")
    return 0


def reference(case: chat.Case) -> dict:
    """A case as cases.json keeps it: references to the commit, never the repository's files."""
    return {
        "id": case.id,
        "repo": case.repo,
        "commit": case.commit,
        "parent": case.parent,
        "date": case.date,
        "subject": case.subject,
        "gold": case.gold,
    }


def write_held_out(candidates_only: bool) -> int:
    """HELD_OUT_PER_REPO cases of each of HELD_OUT_REPOS by chat.choose's rule (evenly spaced in time),
    read by no one before they were measured: no REJECTED of their own."""
    cases: list[dict] = []
    for name in HELD_OUT_REPOS:
        Repo(name).check()
        found = chat.candidates(name, MAX_FILES)
        if candidates_only:
            for case in found:
                print(f"{case.date} {case.commit[:10]} {case.subject[:90]} | {' '.join(case.gold)}")
            continue
        found = [case for case in found if not NOT_A_CHANGE.search(case.subject)]
        cases += [reference(case) for case in chat.choose(found, HELD_OUT_PER_REPO, ())]
    if not candidates_only:
        HELD_OUT_CASES.write_text(json.dumps(cases, indent=2) + "\n")
        print(f"wrote {len(cases)} cases to {HELD_OUT_CASES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
