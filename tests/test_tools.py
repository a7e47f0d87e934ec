"""The model's tools and their sandbox, on temporary workspaces; no model, no server."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from lsp_server.assistant.tools.proposals import ProposedEdit
from lsp_server.assistant.tools.runner import SEARCH_TIME_BUDGET_S, ToolRunner
from lsp_server.assistant.tools.schemas import TOOL_NAMES, TOOL_SCHEMAS, schemas_for
from lsp_server.assistant.tools.workspace_files import ToolError, WorkspaceFiles


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("def main():\n    print('hello')\n\n\nmain()\n")
    (folder / "src" / "util.py").write_text("def helper(x):\n    return x + 1\n")
    (folder / "README.md").write_text("# Project\n\nSay hello.\n")
    return folder.resolve()


def runner_for(*roots: Path, **callbacks: object) -> ToolRunner:
    return ToolRunner(WorkspaceFiles(list(roots), **callbacks))  # type: ignore[arg-type]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


# read_file


def test_read_file_shows_the_text_with_a_header(root: Path):
    result = runner_for(root).run("read_file", {"path": "src/app.py"}).text
    assert result.splitlines()[0] == "src/app.py (lines 1-5 of 5):"
    assert "def main():\n    print('hello')\n" in result


def test_read_file_reads_an_inclusive_line_range(root: Path):
    result = runner_for(root).run("read_file", {"path": "src/app.py", "startLine": 2, "endLine": 2}).text
    assert result == "src/app.py (lines 2-2 of 5):\n    print('hello')\n"


def test_read_file_accepts_arguments_as_a_json_string_and_nulls_as_omitted(root: Path):
    arguments = json.dumps({"path": "src/util.py", "startLine": None, "endLine": None})
    result = runner_for(root).run("read_file", arguments).text
    assert result.startswith("src/util.py (lines 1-2 of 2):")


def test_read_file_caps_long_files_and_says_how_to_read_on(root: Path):
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    runner = runner_for(root)
    result = runner.run("read_file", {"path": "long.txt"}).text
    assert result.startswith("long.txt (lines 1-400 of 1000):")
    assert "line 400\n" in result and "line 401\n" not in result
    assert "startLine=401" in result
    assert runner.run("read_file", {"path": "long.txt", "startLine": 401}).text.startswith(
        "long.txt (lines 401-800 of 1000):"
    )


def test_read_file_caps_the_bytes_it_shows(root: Path):
    (root / "wide.txt").write_text(("x" * 999 + "\n") * 100)
    result = runner_for(root).run("read_file", {"path": "wide.txt"}).text
    assert result.startswith("wide.txt (lines 1-32 of 100):")
    assert "startLine=33" in result


def test_read_file_rejects_a_range_past_the_end_or_backwards(root: Path):
    runner = runner_for(root)
    assert runner.run("read_file", {"path": "src/app.py", "startLine": 9}).text.startswith(
        "Error: startLine 9"
    )
    assert runner.run("read_file", {"path": "src/app.py", "startLine": 3, "endLine": 2}).text.startswith(
        "Error:"
    )
    assert runner.run("read_file", {"path": "src/app.py", "startLine": 0}).text.startswith("Error:")


def test_read_file_of_a_missing_file_or_a_directory_is_an_error(root: Path):
    runner = runner_for(root)
    assert "does not exist" in runner.run("read_file", {"path": "src/nope.py"}).text
    assert "is a directory" in runner.run("read_file", {"path": "src"}).text


def test_open_document_text_wins_over_the_disk(root: Path):
    app = root / "src" / "app.py"

    def open_text(path: Path) -> str | None:
        return "unsaved text\n" if path == app else None

    runner = runner_for(root, open_text=open_text)
    assert runner.run("read_file", {"path": "src/app.py"}).text.endswith("\nunsaved text\n")
    assert runner.run("search", {"pattern": "unsaved"}).text == "src/app.py:1: unsaved text"
    assert runner.run("search", {"pattern": "print"}).text == "No matches for 'print'."


# WorkspaceFiles


def test_a_dotdot_escape_is_refused(root: Path):
    (root.parent / "secret.txt").write_text("TOKEN")
    runner = runner_for(root)
    for path in ("../secret.txt", "src/../../secret.txt"):
        result = runner.run("read_file", {"path": path}).text
        assert result.startswith("Error:") and "outside the workspace" in result
        assert "TOKEN" not in result


def test_a_dotdot_that_stays_inside_is_allowed(root: Path):
    result = runner_for(root).run("read_file", {"path": "src/../README.md"}).text
    assert result.startswith("README.md (lines 1-3 of 3):")


def test_an_absolute_path_outside_the_folders_is_refused(root: Path):
    outside = root.parent / "elsewhere.txt"
    outside.write_text("no")
    result = runner_for(root).run("read_file", {"path": str(outside)}).text
    assert result.startswith("Error:") and "outside the workspace" in result


def test_an_absolute_path_inside_a_folder_is_allowed(root: Path):
    result = runner_for(root).run("read_file", {"path": str(root / "src" / "util.py")}).text
    assert result.startswith("src/util.py (lines 1-2 of 2):")


def test_a_symlink_leading_outside_is_refused_and_not_listed(root: Path):
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret token\n")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    runner = runner_for(root)
    assert "outside the workspace" in runner.run("read_file", {"path": "link.txt"}).text
    assert "outside the workspace" in runner.run("read_file", {"path": "linkdir/secret.txt"}).text
    assert (
        "outside the workspace" in runner.run("create_file", {"path": "linkdir/new.txt", "content": ""}).text
    )
    assert "link" not in runner.run("search", {}).text
    assert runner.run("search", {"pattern": "secret"}).text == "No matches for 'secret'."


def test_a_symlink_inside_the_workspace_reads_its_target(root: Path):
    (root / "alias.py").symlink_to(root / "src" / "util.py")
    result = runner_for(root).run("read_file", {"path": "alias.py"}).text
    assert result.startswith("src/util.py (lines 1-2 of 2):")


def test_a_file_swapped_for_an_outside_symlink_during_reads_never_leaks(root: Path):
    """The swap races the read: a file, and the directory above another, keep being replaced by links
    to an outside secret while the tools read them. A read sees the file or refuses; never the secret."""
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("SECRET\n")
    (root / "data.txt").write_text("plain\n")
    (root / "dir").mkdir()
    (root / "dir" / "data.txt").write_text("plain\n")
    stop = threading.Event()

    def swap(name: str, target: Path) -> None:
        real, link, spare = root / name, root / f".{name}.link", root / f".{name}.real"
        while not stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(target)
            os.rename(real, spare)  # moves the real entry aside; the link takes its place at once
            os.rename(link, real)
            os.rename(real, link)
            os.rename(spare, real)

    swappers = [
        threading.Thread(target=swap, args=("data.txt", outside / "data.txt")),
        threading.Thread(target=swap, args=("dir", outside)),
    ]
    for thread in swappers:
        thread.start()
    runner = runner_for(root)
    seen: list[str] = []
    try:
        for n in range(3000):
            if n % 3 == 2:  # search reads every file, through the same check
                seen.append(runner.run("search", {"pattern": ".", "glob": "data.txt"}).text)
            else:
                seen.append(runner.run("read_file", {"path": ("data.txt", "dir/data.txt")[n % 3]}).text)
    finally:
        stop.set()
        for thread in swappers:
            thread.join()
    assert sum("plain" in text for text in seen) > 0  # the race ran: some reads saw the real file
    assert [text for text in seen if "SECRET" in text] == []


def test_a_read_given_an_unresolved_path_follows_links_only_inside_the_workspace(root: Path):
    """The read itself walks the path (a link may appear after `resolve`): links and `..` that stay inside
    are followed, as `resolve` follows them, and one that leaves is refused."""
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "util.py").write_text("SECRET\n")
    (root / "lib").symlink_to("src")  # relative
    (root / "src" / "again.py").symlink_to(root / "src" / "util.py")  # absolute
    (root / "up").symlink_to("src/..")
    (root / "away").symlink_to(outside)
    sandbox = WorkspaceFiles([root])
    util = (root / "src" / "util.py").read_text()
    assert sandbox.read_text(root / "lib" / "util.py") == util
    assert sandbox.read_text(root / "lib" / "again.py") == util
    assert sandbox.read_text(root / "up" / "lib" / ".." / "src" / "util.py") == util
    for escape in (root / "away" / "util.py", root / "lib" / ".." / ".." / "outside" / "util.py"):
        with pytest.raises(ToolError, match="outside the workspace"):
            sandbox.read_text(escape)
    (root / "loop").symlink_to("loop")
    with pytest.raises(ToolError, match="cannot read loop/x: Too many levels of symbolic links"):
        sandbox.read_text(root / "loop" / "x")


def test_a_fifo_is_refused_without_waiting_for_a_writer(root: Path):
    os.mkfifo(root / "pipe")
    runner = runner_for(root)
    started = time.monotonic()
    assert runner.run("read_file", {"path": "pipe"}).text == "Error: pipe is not a regular file"
    assert runner.run("search", {"pattern": "print"}).text == "src/app.py:2: print('hello')"
    assert time.monotonic() - started < 2


def test_binary_files_are_refused(root: Path):
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    runner = runner_for(root)
    assert "binary" in runner.run("read_file", {"path": "image.png"}).text
    assert "binary" in runner.run("read_file", {"path": "latin1.txt"}).text
    assert runner.run("search", {"pattern": "PNG|caf"}).text == "No matches for 'PNG|caf'."


def test_huge_files_are_refused(root: Path):
    (root / "huge.txt").write_text("needle\n" + "x" * (600 * 1024))
    runner = runner_for(root)
    result = runner.run("read_file", {"path": "huge.txt"}).text
    assert result.startswith("Error:") and "too large" in result
    assert runner.run("search", {"pattern": "needle"}).text == "No matches for 'needle'."


def test_sandbox_resolve_raises_tool_error_for_escapes(root: Path):
    sandbox = WorkspaceFiles([root])
    assert sandbox.resolve("src/app.py") == root / "src" / "app.py"
    with pytest.raises(ToolError):
        sandbox.resolve("../x")
    with pytest.raises(ToolError):
        sandbox.resolve("")


def test_with_two_folders_paths_start_with_the_folder_name_and_read_back(root: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.py").write_text("VALUE = 1\n")
    runner = runner_for(root, other.resolve())
    listed = runner.run("search", {"glob": "*.py"}).text.splitlines()
    assert listed == sorted([f"{root.name}/src/app.py", f"{root.name}/src/util.py", "other/lib.py"])
    assert runner.run("read_file", {"path": "other/lib.py"}).text.startswith("other/lib.py (lines 1-1 of 1):")


# search without a pattern: the files


def test_search_without_a_pattern_lists_relative_sorted_paths_skipping_tool_directories(root: Path):
    for skipped in (".git", "node_modules", ".venv", "__pycache__", "build", "dist", ".cache"):
        (root / skipped).mkdir()
        (root / skipped / "x.py").write_text("x\n")
    (root / ".gitignore").write_text("build/\n")
    result = runner_for(root).run("search", {}).text
    assert result.splitlines() == [".gitignore", "README.md", "src/app.py", "src/util.py"]


def test_search_without_a_pattern_matches_globs_from_the_right_and_across_directories(root: Path):
    (root / "src" / "deep" / "er").mkdir(parents=True)
    (root / "src" / "deep" / "er" / "x.py").write_text("")
    runner = runner_for(root)
    assert runner.run("search", {"glob": "*.py"}).text.splitlines() == [
        "src/app.py",
        "src/deep/er/x.py",
        "src/util.py",
    ]
    assert runner.run("search", {"glob": "src/*.py"}).text.splitlines() == ["src/app.py", "src/util.py"]
    assert runner.run("search", {"glob": "src/**/*.py"}).text.splitlines() == [
        "src/app.py",
        "src/deep/er/x.py",
        "src/util.py",
    ]
    assert runner.run("search", {"glob": "/*.md"}).text.splitlines() == ["README.md"]
    assert runner.run("search", {"glob": "*.rs"}).text == "No matches: no files match '*.rs'."


def test_search_without_a_pattern_is_bounded(root: Path):
    many = root / "many"
    many.mkdir()
    for n in range(250):
        (many / f"f{n:03}.txt").write_text("")
    lines = runner_for(root).run("search", {"glob": "many/*"}).text.splitlines()
    assert len(lines) == 201
    assert lines[0] == "many/f000.txt" and lines[199] == "many/f199.txt"
    assert lines[200].startswith("... 50 more")


# search


def test_search_reports_path_line_and_text(root: Path):
    result = runner_for(root).run("search", {"pattern": r"def \w+\("}).text
    assert result.splitlines() == ["src/app.py:1: def main():", "src/util.py:1: def helper(x):"]


def test_search_filters_by_glob(root: Path):
    result = runner_for(root).run("search", {"pattern": "hello", "glob": "*.md"}).text
    assert result == "README.md:3: Say hello."


def test_an_invalid_regex_is_searched_as_literal_text(root: Path):
    result = runner_for(root).run("search", {"pattern": "helper("}).text
    assert result.splitlines() == [
        "(not a valid regular expression, so searched as plain text)",
        "src/util.py:1: def helper(x):",
    ]


def test_search_is_bounded_in_matches_and_line_length(root: Path):
    (root / "big.txt").write_text(("needle " + "y" * 500 + "\n") * 80)
    lines = runner_for(root).run("search", {"pattern": "needle"}).text.splitlines()
    assert len(lines) == 51
    assert lines[0].startswith("big.txt:1: needle yyy")
    assert all(len(line) <= len("big.txt:50: ") + 203 for line in lines[:50])
    assert lines[50].startswith("[stopped after 50 matches")


def test_lines_are_numbered_as_the_editor_numbers_them_form_feeds_included(root: Path):
    (root / "old.py").write_text("a = 1\n\x0c\nb = 2\n")  # a form feed is not a line ending in LSP
    runner = runner_for(root)
    assert runner.run("read_file", {"path": "old.py"}).text.startswith("old.py (lines 1-3 of 3):")
    assert runner.run("search", {"pattern": "b = ", "glob": "old.py"}).text == "old.py:3: b = 2"
    assert (
        "at line 3" in runner.run("edit", {"path": "old.py", "old_text": "b = 2", "new_text": "b = 3"}).text
    )


def test_a_backtracking_regex_answers_at_once(root: Path):
    (root / "src" / "aaa.txt").write_text("a" * 27 + "b\n")  # `re` spends 2**27 steps on `(a+)+$` here
    started = time.monotonic()
    result = runner_for(root).run("search", {"pattern": "(a+)+$"}).text
    # Within the budget, however loaded the machine: backtracking would take `re` minutes here.
    assert time.monotonic() - started < SEARCH_TIME_BUDGET_S
    assert result == "No matches for '(a+)+$'."


def test_a_catastrophic_regex_stops_within_the_time_budget_and_says_so(root: Path):
    (root / "src" / "aaa.txt").write_text("a" * 40 + "b\n")
    started = time.monotonic()
    result = runner_for(root).run("search", {"pattern": "(a|aa)+$"}).text
    elapsed = time.monotonic() - started
    assert SEARCH_TIME_BUDGET_S - 0.5 < elapsed < SEARCH_TIME_BUDGET_S * 2, elapsed  # 2x: a loaded machine
    assert "src/aaa.txt:1; the pattern is too slow to match" in result


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": "x" * 5000}),  # longer than NAME_MAX: stat raises ENAMETOOLONG
        ("read_file", {"path": "loop/x.py"}),
        ("edit", {"path": "loop", "old_text": "a", "new_text": "b"}),
        ("create_file", {"path": "y" * 5000 + ".py", "content": "x = 1\n"}),
        ("search", {}),
        ("search", {"pattern": "hello"}),
    ],
)
def test_file_system_failures_come_back_to_the_model_as_errors(root: Path, name: str, arguments: object):
    (root / "loop").symlink_to(root / "loop")  # a link to itself: resolving it raises
    result = runner_for(root).run(name, arguments).text
    if name == "search":
        assert not result.startswith("Error"), result  # the loop is skipped, the rest still listed
        assert "src/app.py" in result
    else:
        assert result.startswith("Error: "), result


# edit and create_file


def test_edit_is_proposed_not_written(root: Path):
    before = snapshot(root)
    runner = runner_for(root)
    result = runner.run("edit", {"path": "src/util.py", "old_text": "x + 1", "new_text": "x + 2"}).text
    assert "Proposed an edit to src/util.py at line 2" in result and "review" in result
    assert runner.proposals.edits == [ProposedEdit(root / "src" / "util.py", "x + 1", "x + 2")]
    assert runner.proposals.edits[0].kind == "replace"
    assert snapshot(root) == before


def test_chained_edits_on_one_file_see_the_earlier_ones(root: Path):
    runner = runner_for(root)
    util = root / "src" / "util.py"
    assert (
        "Proposed"
        in runner.run("edit", {"path": "src/util.py", "old_text": "x + 1", "new_text": "x + 2"}).text
    )
    # The second edit quotes text only the first one produced.
    assert (
        "Proposed"
        in runner.run("edit", {"path": "src/util.py", "old_text": "x + 2", "new_text": "x * 3"}).text
    )
    assert runner.proposals.text_after_edits(util) == "def helper(x):\n    return x * 3\n"
    assert "x * 3" in runner.run("read_file", {"path": "src/util.py"}).text
    assert runner.run("search", {"pattern": "x \\* 3"}).text == "src/util.py:2: return x * 3"
    assert [edit.new_text for edit in runner.proposals.edits] == ["x + 2", "x * 3"]
    assert util.read_text() == "def helper(x):\n    return x + 1\n"


def test_an_edit_that_does_not_apply_is_an_error_and_records_nothing(root: Path):
    (root / "dup.py").write_text("x = 1\nx = 1\n")
    runner = runner_for(root)
    missing = runner.run("edit", {"path": "src/util.py", "old_text": "x + 9", "new_text": "y"}).text
    assert missing.startswith("Error: old_text does not occur") and "src/util.py is unchanged" in missing
    ambiguous = runner.run("edit", {"path": "dup.py", "old_text": "x = 1", "new_text": "x = 2"}).text
    assert ambiguous.startswith("Error: old_text occurs 2 times")
    empty = runner.run("edit", {"path": "dup.py", "old_text": "", "new_text": "x"}).text
    assert empty.startswith("Error: old_text is empty")
    same = runner.run("edit", {"path": "dup.py", "old_text": "x = 1\nx", "new_text": "x = 1\nx"}).text
    assert same.startswith("Error:")
    assert runner.proposals.edits == []
    assert runner.proposals.text_after_edits(root / "dup.py") == "x = 1\nx = 1\n"


def test_an_edit_to_a_missing_or_outside_file_is_an_error(root: Path):
    runner = runner_for(root)
    assert "does not exist" in runner.run("edit", {"path": "nope.py", "old_text": "a", "new_text": "b"}).text
    assert "outside" in runner.run("edit", {"path": "../x.py", "old_text": "a", "new_text": "b"}).text
    assert runner.proposals.edits == []


def test_create_file_is_proposed_not_written_and_can_be_read_and_edited(root: Path):
    before = snapshot(root)
    runner = runner_for(root)
    result = runner.run("create_file", {"path": "src/new/mod.py", "content": "A = 1\nB = 2\n"}).text
    assert "Proposed creating src/new/mod.py (2 lines)" in result
    new = root / "src" / "new" / "mod.py"
    assert runner.proposals.edits == [ProposedEdit(new, None, "A = 1\nB = 2\n")]
    assert runner.proposals.edits[0].kind == "create"
    assert runner.run("read_file", {"path": "src/new/mod.py"}).text.startswith(
        "src/new/mod.py (lines 1-2 of 2):"
    )
    assert "src/new/mod.py" in runner.run("search", {}).text.splitlines()
    assert (
        "Proposed"
        in runner.run("edit", {"path": "src/new/mod.py", "old_text": "B = 2", "new_text": "B = 3"}).text
    )
    assert runner.proposals.text_after_edits(new) == "A = 1\nB = 3\n"
    assert not (root / "src" / "new").exists()
    assert snapshot(root) == before


def test_create_file_refuses_an_existing_or_already_proposed_path(root: Path):
    runner = runner_for(root, open_text=lambda p: "unsaved" if p.name == "untitled.py" else None)
    for existing in ("src/app.py", "src", "untitled.py"):
        assert (
            f"{existing} already exists" in runner.run("create_file", {"path": existing, "content": "x"}).text
        )
    assert "Proposed" in runner.run("create_file", {"path": "new.py", "content": "x"}).text
    assert "already proposed" in runner.run("create_file", {"path": "new.py", "content": "y"}).text
    assert "is a file" in runner.run("create_file", {"path": "README.md/x.py", "content": "y"}).text
    assert [edit.path.name for edit in runner.proposals.edits] == ["new.py"]


def test_nothing_is_ever_written_to_disk(root: Path):
    before = snapshot(root)
    runner = runner_for(root)
    runner.run("edit", {"path": "src/app.py", "old_text": "hello", "new_text": "bye"})
    runner.run("create_file", {"path": "fresh.txt", "content": "new"})
    runner.run("read_file", {"path": "src/app.py"})
    runner.run("search", {})
    runner.run("search", {"pattern": "bye"})
    assert len(runner.proposals.edits) == 2
    assert snapshot(root) == before
    assert sorted(os.listdir(root)) == ["README.md", "src"]


# Calls the model gets wrong, and the schemas


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("delete_file", {"path": "src/app.py"}, "no tool named 'delete_file'"),
        ("read_file", ["src/app.py"], "must be a JSON object"),
        ("read_file", "not json", "not valid JSON"),
        ("read_file", {}, "needs the argument 'path'"),
        ("read_file", {"path": 3}, "'path' to read_file must be a string"),
        ("read_file", {"path": "src/app.py", "startLine": "2"}, "must be an integer"),
        ("read_file", {"path": "src/app.py", "startLine": True}, "must be an integer"),
        ("read_file", {"path": "src/app.py", "start_line": 2}, "no argument 'start_line'"),
        ("edit", {"path": "src/app.py", "old_text": "main"}, "needs the argument 'new_text'"),
        ("create_file", {"path": "x.py", "content": 5}, "must be a string"),
        ("search", {"pattern": 3}, "'pattern' to search must be a string"),
        ("search", {"glob": "[z-a]"}, "not a valid glob"),
    ],
)
def test_model_mistakes_come_back_as_errors(root: Path, name: str, arguments: object, expected: str):
    runner = runner_for(root)
    result = runner.run(name, arguments).text
    assert result.startswith("Error: ")
    assert expected in result
    assert runner.proposals.edits == []


def test_schemas_declare_the_four_tools_in_a_fixed_order():
    names = [schema["function"]["name"] for schema in TOOL_SCHEMAS]
    assert names == TOOL_NAMES == ["read_file", "search", "edit", "create_file"]
    for schema in TOOL_SCHEMAS:
        assert schema["type"] == "function"
        parameters = schema["function"]["parameters"]
        assert set(parameters.get("required", [])) <= set(parameters["properties"])
    assert [s["function"]["name"] for s in schemas_for(["edit", "read_file"])] == ["read_file", "edit"]
    with pytest.raises(ValueError):
        schemas_for(["nope"])


def test_a_python_edit_that_breaks_the_syntax_is_refused(root: Path):
    (root / "ok.py").write_text("def f():\n    return 1\n")
    runner = ToolRunner(WorkspaceFiles([root]))
    result = runner.run(
        "edit", {"path": "ok.py", "old_text": "    return 1", "new_text": "      return 1\n  x"}
    ).text
    assert result.startswith("Error:") and "would not parse" in result
    assert runner.proposals.edits == []
    assert runner.run(
        "edit", {"path": "ok.py", "old_text": "return 1", "new_text": "return 2"}
    ).text.startswith("Proposed")
