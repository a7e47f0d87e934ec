"""The next-edit eval without a model or the mirrors: hunks split and filtered from a real git history made
here, cases built from them, the baseline and the scores, and cases.json's references well-formed."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "eval" / "next_edit"


def load(name: str, path: Path) -> ModuleType:
    """The eval's scripts are not package modules: loaded by path, under names of their own."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


build = load("eval_next_edit_build", HERE / "build.py")
runner = load("eval_next_edit_run", HERE / "run.py")
substitution = sys.modules["substitution"]  # eval/next_edit/substitution.py, as the scripts import it
textedit = sys.modules["textedit"]

BASE = "".join(
    [
        "def total(items):\n",
        "    count = 0\n",
        "    for item in items:\n",
        "        count += item.price\n",
        "    return count\n",
        "\n",
        *(f"CONSTANT_{i} = {i}\n" for i in range(100)),
        "\n",
        "def late(items):\n",
        "    return total(items)\n",
    ]
)


class History:
    """A git repository in a temporary folder, committed to with fixed dates, and its bare mirror."""

    def __init__(self, tmp_path: Path):
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.mirrors = tmp_path / "mirrors"
        self.env = {
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@example.com",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.com",
        }
        self.git("init", "-q", "-b", "main")

    def git(self, *arguments: str, date: str = "2020-01-01T12:00:00Z") -> str:
        env = {**self.env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        done = subprocess.run(
            ["git", *arguments], cwd=self.work, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def commit(self, subject: str, date: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            path = self.work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", subject, date=date)
        return self.git("rev-parse", "HEAD").strip()

    def mirror(self, name: str) -> Path:
        target = self.mirrors / name.replace("/", "+") / "repo"
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(self.work), str(target)], env=self.env, check=True
        )
        return target


def edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    made = History(tmp_path_factory.mktemp("next-edit-history"))
    made.commit("start", "2020-01-01T12:00:00Z", {"mod.py": BASE, "README": "x\n"})
    text = BASE
    steps = [
        # (subject, date, the new text of mod.py, other files)
        ("rename items", "2020-02-01T12:00:00Z", lambda t: edited(edited(t, "total(items):", "total(goods):"), "in items:", "in goods:"), {}),  # noqa: E501
        ("raise a constant", "2020-03-01T12:00:00Z", lambda t: edited(t, "CONSTANT_5 = 5\n", "CONSTANT_5 = 50\n"), {}),  # noqa: E501
        ("spaces only", "2020-04-01T12:00:00Z", lambda t: edited(t, "    count = 0", "    count  = 0"), {}),
        ("a comment only", "2020-05-01T12:00:00Z", lambda t: edited(t, "    return count\n", "    return count\n    # done\n"), {}),  # noqa: E501
        ("two hunks far apart", "2020-06-01T12:00:00Z", lambda t: edited(edited(t, "    return count\n", "    return count + 0\n"), "def late(items):", "def late(things):"), {}),  # noqa: E501
        ("too many files", "2020-07-01T12:00:00Z", lambda t: edited(t, "CONSTANT_7 = 7\n", "CONSTANT_7 = 70\n"), {f"f{i}.txt": "x\n" for i in range(5)}),  # noqa: E501
        ("too big a hunk", "2020-08-01T12:00:00Z", lambda t: edited(t, "CONSTANT_9 = 9\n", "".join(f"NEW_{i} = {i}\n" for i in range(7))), {}),  # noqa: E501
        ("after the cut", "2024-07-01T12:00:00Z", lambda t: edited(t, "CONSTANT_8 = 8\n", "CONSTANT_8 = 80\n"), {}),  # noqa: E501
    ]  # fmt: skip
    for subject, date, change, others in steps:
        text = change(text)
        made.commit(subject, date, {"mod.py": text, **others})
    made.mirror("someone/project")
    return made


@pytest.fixture(scope="module")
def found(history: History) -> list:
    repo = build.Repo("someone/project", history.mirrors)
    return [candidate for candidate, _, _ in build.candidates(repo, "python")]


def test_the_hunks_of_a_diff_are_split_per_file_with_their_lines():
    diff = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
        "@@ -3 +3 @@ def f():\n-    a = 1\n+    a = 2\n"
        "@@ -10,0 +11,2 @@\n+x = 1\n+y = 2\n"
        "diff --git a/n.py b/n.py\n--- a/n.py\n+++ b/n.py\n@@ -1,2 +0,0 @@\n-p\n-q\n"
    )
    hunks = build.parse_diff(diff)
    assert [h.header() for h in hunks["m.py"]] == ["-3,1 +3,1", "-10,0 +11,2"]
    assert hunks["m.py"][1].added == ("x = 1", "y = 2") and hunks["m.py"][1].start == 10
    assert hunks["n.py"][0].removed == ("p", "q") and hunks["n.py"][0].new_first == 0
    assert build.Hunk.from_header("-10,0 +11,2") == build.Hunk(10, 0, 11, 2)


def test_only_small_substantive_hunks_close_together_make_cases(found: list):
    assert [(c.subject, c.kind) for c in found] == [
        ("rename items", "next-edit"),
        ("raise a constant", "no-suggestion"),
    ]
    rename, constant = found
    assert rename.hunks == ["-1,1 +1,1", "-3,1 +3,1"] and rename.repeat
    assert constant.hunks == ["-12,1 +12,1"] and not constant.repeat
    assert rename.id == f"project-next-{rename.commit[:8]}" and rename.date == "2020-02-01T12:00:00Z"


def test_a_case_is_rebuilt_from_git_with_the_first_hunk_as_the_users_edit(
    found: list, history: History, tmp_path: Path
):
    out = tmp_path / "cases"
    assert build.rebuild([asdict(c) for c in found], out, history.mirrors) == 2
    rename = json.loads((out / f"{found[0].id}.json").read_text())
    assert rename["before"] == BASE
    assert rename["user_edit"] == {"start_line": 0, "end_line": 1, "new_text": "def total(goods):\n"}
    assert rename["after_user"].startswith("def total(goods):\n    count = 0\n    for item in items:\n")
    assert rename["cursor"] == {"line": 0, "character": len("def total(goods")}
    assert rename["next_edit"] == {"start_line": 2, "end_line": 3, "new_text": "    for item in goods:\n"}
    assert rename["expected"] == textedit.apply_edits(
        rename["after_user"],
        [{"range": {"start": {"line": 2, "character": 0}, "end": {"line": 3, "character": 0}},
          "newText": "    for item in goods:\n"}],
    )  # fmt: skip
    assert rename["distance"] == 1
    constant = json.loads((out / f"{found[1].id}.json").read_text())
    assert constant["expected"] is None and constant["next_edit"] is None
    assert constant["cursor"] == {"line": 11, "character": len("CONSTANT_5 = 50")}

    # the baseline repeats the rename at the next occurrence, and finds nothing to repeat after the constant
    assert runner.score(rename, runner.baseline_edits(rename)) == runner.Score("exact", overlap=True)
    assert runner.baseline_edits(constant) is None
    assert runner.score(constant, None) == runner.Score("none")


def test_the_cursor_ends_where_the_typing_did():
    assert build.typing_end("    a = f(x)\n", "    a = f(x, y)\n") == len("    a = f(x, y")
    assert build.typing_end("", "import os\n") == len("import os")  # a new line: before its newline
    assert build.typing_end("y = 2\n", "") == 0  # a deletion: where it was
    assert build.typing_end("def f(items):\n", "def f(goods):\n") == len("def f(goods")  # the whole word


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("    count = 0\n", "    amount = 0\n", ("count", "amount")),
        ("x = get_value()\n", "x = get_values()\n", ("get_value", "get_values")),  # not "" -> "s"
        ("def f(old_name):\n", "def f(new_name):\n", ("old_name", "new_name")),  # not "old" -> "new"
        ("f(a, b)\n", "f(a)\n", (", b", "")),
        ("f(a)\n", "f(a, b)\n", None),  # an insertion: nothing to look for
        ("x = 1\n", "x = 1\n", None),
        ("a = 1\nb = 2\n", "a = 2\nb = 3\n", None),  # spans two lines
    ],
)
def test_the_users_edit_read_as_one_substitution(old: str, new: str, expected: tuple[str, str] | None):
    found = substitution.substitution(old, new)
    assert (None if found is None else (found.old, found.new)) == expected


def test_the_baseline_replaces_the_next_whole_occurrence_else_the_nearest_before():
    text = "a = count\nb = counter + count\nc = count\n"
    written = (0, 0)
    assert substitution.next_occurrence(text, "count", 10, written) == len("a = count\nb = counter + ")
    assert substitution.next_occurrence(text, "count", len(text), written) == text.rindex("count")
    assert substitution.next_occurrence(text, "count", 0, (4, 9)) == len("a = count\nb = counter + ")
    assert substitution.occurrences("mycount count_x count", "count") == [len("mycount count_x ")]
    assert substitution.repeats(
        substitution.substitution("f(x)\n", "g(x)\n"), "y = f(1) + f(2)\n", "y = g(1) + g(2)\n"
    )


def test_scores_exact_wrong_overlap_none_and_suggested():
    case = {
        "after_user": "a\nb\nc\nd\n",
        "expected": "a\nB\nc\nd\n",
        "next_edit": {"start_line": 1, "end_line": 2, "new_text": "B\n"},
    }

    def replace(line: int, text: str) -> list[dict]:
        return [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}},
                 "newText": text}]  # fmt: skip

    assert runner.score(case, replace(1, "B")).outcome == "exact"
    assert runner.score(case, replace(1, "X")) == runner.Score("wrong", overlap=True)
    assert runner.score(case, replace(3, "X")) == runner.Score("wrong", overlap=False)
    assert runner.score(case, None) == runner.Score("none")
    bad = runner.score(case, replace(9, "X"))
    assert bad.outcome == "wrong" and "outside" in bad.error
    assert runner.score({**case, "expected": None}, replace(1, "B")).outcome == "suggested"
    assert runner.score({**case, "expected": "a\nB   \nc\nd\n\n"}, replace(1, "B")).outcome == "exact"


def test_positions_are_utf16_columns():
    text = "x = '\U0001f600'  # b\nsecond\n"
    at = text.index("#")
    assert textedit.position(text, at) == {"line": 0, "character": at + 1}  # the emoji takes two units
    assert textedit.offset(text, {"line": 0, "character": at + 1}) == at
    assert textedit.offset(text, {"line": 1, "character": 99}) == len(text) - 1  # clamped to the line's end
    with pytest.raises(ValueError, match="overlapping"):
        edit = {
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
            "newText": "",
        }
        textedit.apply_edits(text, [edit, edit])


def test_the_committed_references_are_well_formed():
    references = json.loads((HERE / "cases.json").read_text())
    ids = [r["id"] for r in references]
    assert len(ids) == len(set(ids))
    for r in references:
        assert r["repo"] in build.REPOS and r["language"] == build.REPOS[r["repo"]]
        assert re.fullmatch("[0-9a-f]{40}", r["commit"]) and re.fullmatch("[0-9a-f]{40}", r["parent"])
        assert r["path"] and r["path"].endswith(build.SUFFIXES[r["language"]])
        assert build.SINCE <= r["date"] < "2024-06-01", r["id"]
        hunks = [build.Hunk.from_header(h) for h in r["hunks"]]
        assert len(hunks) == (2 if r["kind"] == "next-edit" else 1), r["id"]
        assert all(h.old_lines <= build.MAX_HUNK_LINES and h.new_lines <= build.MAX_HUNK_LINES for h in hunks)
        if r["kind"] == "next-edit":
            assert 0 <= build.distance(*hunks) <= build.MAX_DISTANCE
    kinds = [r["kind"] for r in references]
    assert kinds.count("next-edit") >= 50 and kinds.count("no-suggestion") >= 25
    assert sum(r["repeat"] for r in references) == build.REPEATS
    for repo, language in build.REPOS.items():
        for kind, cap in build.PER_REPO[language].items():
            assert sum(r["repo"] == repo and r["kind"] == kind for r in references) <= cap


def test_the_doc_section_has_a_row_per_repository_renames_and_all():
    exact, none = runner.Score("exact", overlap=True), runner.Score("none")
    outcomes = [
        runner.Outcome(
            "flask-next-1", "pallets/flask", "next-edit", "python", True, 3, none,
            model=exact, t_ms=900.0, n_evaluated=150,
        ),
        runner.Outcome(
            "cobra-single-2", "spf13/cobra", "no-suggestion", "go", False, 0, none,
            model=none, t_ms=300.0, n_evaluated=40,
        ),
    ]  # fmt: skip
    args = argparse.Namespace(model=runner.models.DEFAULT_MODEL, threads=1)
    section = runner.doc_section(outcomes, args)
    assert section.key == "eval-next-edit"
    rows = section.tables[0].rows
    assert [row[0] for row in rows] == [
        "pallets/flask",
        "spf13/cobra",
        "renames (hunk 2 repeats hunk 1)",
        "all",
    ]
    assert rows[-1] == ["all", "1", "1", "100%", "100%", "0%", "0%", "100%", "0%", "0%", "100%", "0%", "100%"]
    assert section.tables[1].rows[0][:5] == ("2", "0", "0", "600", "840")
    args.model = "qwen2.5-coder-0.5b"
    assert runner.doc_section(outcomes, args).key == "eval-next-edit/qwen2.5-coder-0.5b"
