"""Document cannot change code, by construction: whatever proposes its edit (the rewritten block, or the
edit tool after it), only the documentation the model adds is recorded. No model, no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.assistant import actions
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles

MODULE = """import sys


def do_longs(opts, opt, longopts, args):
    try:
        i = opt.index('=')
    except ValueError:
        optarg = None
    else:
        opt, optarg = opt[:i], opt[i+1:]
    width = maxc-minc
    opts.append(('--' + opt, optarg or ''))
    return opts, args


def caller(args):
    return do_longs([], "x", [], args)
"""
FIRST, LAST = 4, 13  # do_longs, 1-based inclusive

# What a small model wrote back when asked to document do_longs: a new name and parameters, code
# re-spaced, a comment, a docstring.
RENAMED = '''def parse_command_line_options(args, shortopts, longopts):
    """Parse one long option.

    Returns the options and the remaining arguments.
    """
    try:
        i = opt.index("=")  # where the value starts
    except ValueError:
        optarg = None
    else:
        opt, optarg = opt[:i], opt[i + 1 :]
    width = maxc - minc
    opts.append(("--" + opt, optarg or ""))
    return opts, args
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = (tmp_path / "project").resolve()
    folder.mkdir()
    (folder / "getopt_lite.py").write_text(MODULE)
    (folder / "widget.js").write_text("function area(w, h) {\n  return w*h;\n}\n")
    (folder / "notes.xyz").write_text("area w h\n")
    return folder


def document_runner(project: Path) -> ToolRunner:
    return ToolRunner(WorkspaceFiles([project]), admission=actions.BY_NAME["document"].admission())


def propose_block(runner: ToolRunner, path: Path, block: str) -> str | None:
    document = actions.BY_NAME["document"]
    return document.propose_block(runner, path, path.read_text(), FIRST, LAST, "", block)


def recorded(runner: ToolRunner, path: Path) -> str:
    return runner.proposals.text_after_edits(path)


def test_a_renamed_respaced_answer_only_adds_its_documentation(project: Path):
    runner = document_runner(project)
    path = project / "getopt_lite.py"
    assert propose_block(runner, path, RENAMED) is None
    after = recorded(runner, path)
    assert "def do_longs(opts, opt, longopts, args):" in after
    assert "parse_command_line_options" not in after
    assert "width = maxc-minc" in after and "opt[i+1:]" in after and "opt.index('=')" in after
    assert '    """Parse one long option.' in after
    # Every line of the module is still there, in order: only documentation was inserted.
    lines = iter(after.splitlines())
    assert all(any(line == seen for seen in lines) for line in MODULE.splitlines())


def test_an_answer_that_documents_nothing_is_no_edit(project: Path):
    runner = document_runner(project)
    path = project / "getopt_lite.py"
    renamed_only = "".join(MODULE.splitlines(keepends=True)[FIRST - 1 : LAST]).replace("do_longs", "parse")
    problem = propose_block(runner, path, renamed_only)
    assert problem is not None and problem.startswith("That adds no documentation. Add to it:")
    assert runner.proposals.edits == []


def test_the_edit_tool_of_a_document_turn_keeps_the_code_too(project: Path):
    runner = document_runner(project)
    outcome = runner.run(
        "edit",
        {
            "path": "getopt_lite.py",
            "old_text": "def do_longs(opts, opt, longopts, args):\n",
            "new_text": 'def parse_options(args):\n    """Parse one long option."""\n',
        },
    )
    assert outcome.ok, outcome.text
    after = recorded(runner, project / "getopt_lite.py")
    assert "def do_longs(opts, opt, longopts, args):\n" in after and "parse_options" not in after
    assert '"""Parse one long option."""' in after
    created = runner.run("create_file", {"path": "docs.py", "content": '"""Docs."""\n'})
    assert not created.ok and "creates no files" in created.problem


def test_other_languages_keep_their_code_and_gain_only_comment_lines(project: Path):
    runner = document_runner(project)
    path = project / "widget.js"
    answer = (
        "/**\n * The area of a rectangle.\n */\n"
        "function rectArea(w, h) {\n  // width times height\n  return w * h;\n}\n"
    )
    assert runner.proposals.propose_text(path, answer) is None
    assert recorded(runner, path) == (
        "/**\n * The area of a rectangle.\n */\n"
        "function area(w, h) {\n  // width times height\n  return w*h;\n}\n"
    )
    unknown = project / "notes.xyz"
    problem = runner.proposals.propose_text(unknown, "; the area\narea w h\n")
    assert problem is not None and "cannot be told apart" in problem


def test_other_actions_record_what_the_model_wrote(project: Path):
    runner = ToolRunner(WorkspaceFiles([project]))
    path = project / "getopt_lite.py"
    after = MODULE.replace("maxc-minc", "maxc - minc")
    assert runner.proposals.propose_text(path, after) is None
    assert recorded(runner, path) == after


def test_a_docstring_that_shares_lines_with_others_is_still_taken(project: Path):
    # Its quotes on lines of their own and its `Args:` are lines the file already has elsewhere, so
    # they cannot be told new line by line; the answer's code is the same, so it is taken whole.
    path = project / "getopt_lite.py"
    path.write_text('def helper():\n    """\n    Args:\n        none\n    """\n    return 1\n\n\n' + MODULE)
    runner = document_runner(project)
    block = "".join(MODULE.splitlines(keepends=True)[FIRST - 1 : LAST]).replace(
        "    try:\n",
        '    """\n    Parse one long option.\n\n    Args:\n'
        '        opts: the options so far.\n    """\n    try:\n',
        1,
    )
    source = path.read_text()
    document = actions.BY_NAME["document"]
    assert document.propose_block(runner, path, source, FIRST + 8, LAST + 8, "", block) is None
    assert "Parse one long option." in recorded(runner, path)
    assert "def do_longs(opts, opt, longopts, args):" in recorded(runner, path)
