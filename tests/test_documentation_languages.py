"""Document takes only comments, as each language's own tokenizer reads them (lsp_server/assistant/
languages.py): an honest documented answer is kept as written, and every way found for a "comment" to
carry code, swallow code, or change what the program means is refused. Document is offered only for
the languages that can be checked so. No model, no server.

A hostile answer is refused twice over: the check itself (rewrite.adds_only_comments) refuses the
answer as written, and what Document would take of it (rewrite.only_documentation) holds none of it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from lsprotocol import types
from pygls.workspace import Workspace

from lsp_server.assistant import languages
from lsp_server.assistant.rewrite import adds_only_comments, only_documentation
from lsp_server.lsp import code_actions
from lsp_server.lsp.text_document import LspDocuments

# One small function per language, its body line holding `w * h`: the hostile lines go above it.
FUNCTIONS = {
    ".py": "def area(w, h):\n    return w * h\n",
    ".js": "function area(w, h) {\n  return w * h;\n}\n",
    ".ts": "function area(w: number, h: number): number {\n  return w * h;\n}\n",
    ".tsx": "function area(w: number, h: number): number {\n  return w * h;\n}\n",
    ".c": "int area(int w, int h) {\n  return w * h;\n}\n",
    ".cpp": "auto area(int w, int h) -> int {\n  return w * h;\n}\n",
    ".java": "class Shapes {\n  int area(int w, int h) {\n    return w * h;\n  }\n}\n",
    ".cs": "class Shapes {\n    int Area(int w, int h) {\n        return w * h;\n    }\n}\n",
    ".go": "package shapes\n\nfunc Area(w, h int) int {\n\treturn w * h\n}\n",
    ".rs": "fn area(w: i32, h: i32) -> i32 {\n    w * h\n}\n",
    ".rb": "def area(w, h)\n  w * h\nend\n",
    ".sh": 'area() {\n  echo "$(( w * h ))"\n}\n',
}
# A statement that would run, valid where the hostile lines go, and how a line comment starts.
CODE = {
    ".py": ("import os", "#"),
    ".js": ("fetch(process.env.HOME);", "//"),
    ".ts": ("fetch(process.env.HOME);", "//"),
    ".tsx": ("fetch(process.env.HOME);", "//"),
    ".c": ("system(getenv(HOME));", "//"),
    ".cpp": ("system(getenv(HOME));", "//"),
    ".java": ("System.exit(1);", "//"),
    ".cs": ("System.Environment.Exit(1);", "//"),
    ".go": ("os.Exit(1)", "//"),
    ".rs": ("std::process::exit(1);", "//"),
    ".rb": ("system(ENV['HOME'])", "#"),
    ".sh": ('rm -rf "$HOME"', "#"),
}
BLOCK_COMMENTS = [".js", ".ts", ".tsx", ".c", ".cpp", ".java", ".cs", ".go", ".rs"]


def above_body(suffix: str, *inserted: str) -> str:
    """The language's function with lines inserted above its body line, at that line's indentation."""
    lines = FUNCTIONS[suffix].splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "w * h" in line)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    return "".join(lines[:at] + [indent + line + "\n" for line in inserted] + lines[at:])


def test_each_language_of_the_table_has_a_sample_here_and_each_suffix_one_language():
    suffixes = [suffix for language in languages.LANGUAGES for suffix in language.suffixes]
    assert len(suffixes) == len(set(suffixes))
    assert {languages.for_suffix(suffix) for suffix in FUNCTIONS} == set(languages.LANGUAGES)
    assert languages.for_suffix(".JS") is languages.for_suffix(".js")
    assert languages.for_suffix(".xyz") is None


@pytest.mark.parametrize("suffix", [s for s in FUNCTIONS if s != ".py"])
def test_each_grammar_loads_and_a_comment_line_leaves_the_code_as_it_was(suffix: str):
    language = languages.for_suffix(suffix)
    assert language is not None
    plain = language.parse(FUNCTIONS[suffix])
    commented = language.parse(above_body(suffix, f"{CODE[suffix][1]} a comment"))
    damaged = [node for node in plain.code if node[1] == "ERROR" or node[2] == b""]  # b"": MISSING
    assert damaged == []
    body = next(i for i, line in enumerate(FUNCTIONS[suffix].splitlines()) if "w * h" in line)
    assert plain.comment_lines() == set() and commented.comment_lines() == {body}
    assert commented.code == plain.code and len(plain.code) > 5


# --- honest documentation is kept --------------------------------------------------------------------

HONEST = {
    ".py": 'def area(w, h):\n    """The area of a rectangle: w times h."""\n    # width times height\n'
    "    return w * h\n",
    ".js": "/**\n * The area of a rectangle.\n *\n * @param {number} w its width\n"
    " * @returns {number} w times h\n */\nfunction area(w, h) {\n  // width times height\n"
    "  return w * h;\n}\n",
    ".ts": "/** The area of a rectangle. */\nfunction area(w: number, h: number): number {\n"
    "  /* width times height */\n  return w * h;\n}\n",
    ".tsx": "/** The area of a rectangle. */\nfunction area(w: number, h: number): number {\n"
    "  // width times height\n  return w * h;\n}\n",
    ".c": "/*\n * The area of a rectangle.\n\n * Both sides are in pixels.\n */\nint area(int w, int h) {\n"
    "  // width times height\n  return w * h;\n}\n",
    ".cpp": "/// The area of a rectangle.\nauto area(int w, int h) -> int {\n  // width times height\n"
    "  return w * h;\n}\n",
    ".java": "/** Shapes and their sizes. */\nclass Shapes {\n  /**\n   * The area of a rectangle.\n"
    "   *\n   * @param w its width\n   * @return w times h\n   */\n  int area(int w, int h) {\n"
    "    // width times height\n    return w * h;\n  }\n}\n",
    ".cs": "/// <summary>Shapes and their sizes.</summary>\nclass Shapes {\n"
    '    /// <summary>The area of a rectangle.</summary>\n    /// <param name="w">Its width.</param>\n'
    "    int Area(int w, int h) {\n        // width times height\n        return w * h;\n    }\n}\n",
    ".go": "// Package shapes measures shapes.\npackage shapes\n\n// Area is the area of a rectangle.\n"
    "func Area(w, h int) int {\n\t// width times height\n\treturn w * h\n}\n",
    ".rs": "/// The area of a rectangle.\n///\n/// ```\n/// assert_eq!(area(2, 3), 6);\n/// ```\n"
    "fn area(w: i32, h: i32) -> i32 {\n    // width times height\n    w * h\n}\n",
    ".rb": "# The area of a rectangle.\n#\n# @param w [Integer] its width\n=begin\nMore about it.\n=end\n"
    "def area(w, h)\n  # width times height\n  w * h\nend\n",
    ".sh": "# Prints the area of a rectangle: its two arguments multiplied.\narea() {\n"
    '  # arithmetic expansion\n  echo "$(( w * h ))"\n}\n',
}


@pytest.mark.parametrize("suffix", list(HONEST))
def test_an_honest_documented_answer_is_kept_as_written(suffix: str):
    assert only_documentation(suffix, FUNCTIONS[suffix], HONEST[suffix]) == HONEST[suffix]


def test_a_file_keeps_its_line_endings_and_its_missing_final_one():
    before = "package shapes\r\n\r\nfunc Area(w, h int) int { return w * h }"
    answer = (
        "package shapes\n\n// Area is the area of a rectangle.\nfunc Area(w, h int) int { return w * h }\n"
    )
    assert only_documentation(".go", before, answer) == (
        "package shapes\r\n\r\n// Area is the area of a rectangle.\r\n"
        "func Area(w, h int) int { return w * h }"
    )


def test_comments_are_taken_back_into_code_the_model_retouched():
    before = "function area(w, h) {\n  return w*h;\n}\n"
    answer = "// The area.\nfunction rectArea(w, h) {\n  // width times height\n  return w * h;\n}\n"
    assert only_documentation(".js", before, answer) == (
        "// The area.\nfunction area(w, h) {\n  // width times height\n  return w*h;\n}\n"
    )


# --- hostile answers are refused ---------------------------------------------------------------------


def swallowing(suffix: str) -> str:
    """The language's function with its body line inside a block comment opened and closed around it."""
    lines = above_body(suffix, "/* opened here").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "w * h" in line)
    return "".join([*lines[: at + 1], "*/\n", *lines[at + 1 :]])


def hostile_everywhere() -> list:
    """The hostile kinds that apply to every language: code between comments on one line, a block
    opened on one line and closed below code, and a comment that holds a character some language
    reads as a line end (the marker is what must not be taken)."""
    cases = []
    for suffix, (code, line_comment) in CODE.items():
        for name, char in [("lone-cr", "\r"), ("u2028", "\u2028"), ("form-feed", "\f"), ("nel", "\x85")]:
            after = above_body(suffix, f"{line_comment} note{char}{code}")
            cases.append(pytest.param(suffix, FUNCTIONS[suffix], after, char, id=f"{suffix}-{name}"))
        if suffix in BLOCK_COMMENTS:
            between = above_body(suffix, f"/* doc */ {code} /* end */")
            cases.append(pytest.param(suffix, FUNCTIONS[suffix], between, code, id=f"{suffix}-code-between"))
            cases.append(
                pytest.param(suffix, FUNCTIONS[suffix], swallowing(suffix), "opened", id=f"{suffix}-swallows")
            )
    return cases


def string_of(suffix: str, kind: str, opening: str, closing: str, inserted: str) -> pytest.ParameterSet:
    """A multi-line string in the language's function, and the same with a comment line inside it."""
    before = above_body(suffix, opening, "kept", closing)
    after = above_body(suffix, opening, inserted, "kept", closing)
    return pytest.param(suffix, before, after, inserted, id=f"{suffix}-comment-in-{kind}")


INSIDE_STRINGS = [
    string_of(".py", "triple-quoted", 's = """', '"""', "# note"),
    string_of(".js", "template", "s = `", "`;", "// note"),
    string_of(".ts", "template", "const s = `", "`;", "/** note */"),
    string_of(".c", "spliced-string", 'const char *s = "a\\', 'b";', "// note\\"),
    string_of(".cpp", "raw-string", 'auto s = R"(', ')";', "// note"),
    string_of(".java", "text-block", 'String s = """', '""";', "// note"),
    string_of(".cs", "verbatim", 'var s = @"', '";', "// note"),
    string_of(".cs", "raw-string", 'var s = """', '""";', "/// note"),
    string_of(".go", "raw-string", "s := `", "`", "// note"),
    string_of(".rs", "raw-string", 'let s = r#"', '"#;', "// note"),
    string_of(".rs", "string", 'let s = "', '";', "/* note */"),
    string_of(".rb", "heredoc", "s = <<~EOS", "EOS", "# note"),
    string_of(".rb", "percent-q", "s = %q{", "}", "# note"),
    string_of(".sh", "string", 'echo "', '"', "# note"),
]

JAVA = FUNCTIONS[".java"]
C = FUNCTIONS[".c"]
GO_CGO = 'package shapes\n\n/*\n#include <stdlib.h>\n*/\nimport "C"\n'
RUBY_CALL = "puts \\\n  area(2, 3)\n"
SHELL_CALL = "echo \\\n  area\n"
SHELL_HEREDOC = "cat <<EOF\nkept\nEOF\n"
PYTHON_LATIN1 = "# coding: latin-1\nname = 'caf\xe9'\n"

LANGUAGE_SPECIFIC = [
    # C and C++ join a line that ends in a backslash (or the trigraph ??/) to the next, comments included.
    pytest.param(".c", C, above_body(".c", "// note \\"), "note", id="c-splice"),
    pytest.param(".c", C, above_body(".c", "// note \\  "), "note", id="c-splice-after-spaces"),
    pytest.param(".cpp", FUNCTIONS[".cpp"], above_body(".cpp", "// note ??/"), "note", id="cpp-trigraph"),
    pytest.param(".c", C, above_body(".c", "#if 0", "#endif"), "#if", id="c-preprocessor-is-no-comment"),
    # Java reads \uXXXX before it lexes: a newline, or a `*/`, in a comment's text ends it.
    pytest.param(".java", JAVA, above_body(".java", "// x \\u000a System.exit(1);"), "exit", id="java-u000a"),
    pytest.param(
        ".java", JAVA, above_body(".java", "// x \\uuu000d System.exit(1);"), "exit", id="java-u000d"
    ),
    pytest.param(
        ".java", JAVA, above_body(".java", "/* x \\u002a/ System.exit(1); /* */"), "exit", id="java-u002a"
    ),
    pytest.param(".ts", FUNCTIONS[".ts"], "// @ts-nocheck\n" + FUNCTIONS[".ts"], "@ts-", id="ts-directive"),
    pytest.param(
        ".ts",
        FUNCTIONS[".ts"],
        '/// <reference path="x.d.ts" />\n' + FUNCTIONS[".ts"],
        "reference",
        id="ts-ref",
    ),
    pytest.param(".js", FUNCTIONS[".js"], "<!-- note\n" + FUNCTIONS[".js"], "<!--", id="js-html-comment"),
    pytest.param(".js", FUNCTIONS[".js"], FUNCTIONS[".js"] + "/* unclosed\n", "unclosed", id="js-unclosed"),
    pytest.param(".go", FUNCTIONS[".go"], above_body(".go", "//go:noinline"), "go:", id="go-directive"),
    # cgo compiles the comment above `import "C"` as C.
    pytest.param(
        ".go", GO_CGO, GO_CGO.replace("*/", "int x = system(0);\n*/"), "system", id="go-cgo-preamble"
    ),
    pytest.param(".go", GO_CGO, "// Package shapes.\n" + GO_CGO, "Package", id="go-cgo-file"),
    pytest.param(
        ".rb", FUNCTIONS[".rb"], "# frozen_string_literal: true\n" + FUNCTIONS[".rb"], "frozen", id="rb-magic"
    ),
    # A comment after a line continuation ends the statement: `area(2, 3)` is no longer puts's argument.
    pytest.param(".rb", RUBY_CALL, RUBY_CALL.replace("\\\n", "\\\n# note\n"), "note", id="rb-continuation"),
    pytest.param(".rb", "x = 1\n__END__\ndata\n", "x = 1\n__END__\n# note\ndata\n", "note", id="rb-data"),
    pytest.param(
        ".sh", SHELL_HEREDOC, SHELL_HEREDOC.replace("kept", "# note\nkept"), "note", id="sh-heredoc"
    ),
    pytest.param(".sh", SHELL_CALL, SHELL_CALL.replace("\\\n", "\\\n# note\n"), "note", id="sh-continuation"),
    pytest.param(".sh", FUNCTIONS[".sh"], "#!/bin/evil\n" + FUNCTIONS[".sh"], "evil", id="sh-shebang"),
    # Python reads the file's bytes in the encoding its first two lines name.
    pytest.param(".py", "x = 1\n", "# -*- coding: latin-1 -*-\nx = 1\n", "coding", id="py-coding-added"),
    pytest.param(".py", PYTHON_LATIN1, "# a\n# b\n" + PYTHON_LATIN1, "# a", id="py-coding-moved"),
    pytest.param(".py", "x = 1\n", "#!/usr/bin/env evil\nx = 1\n", "evil", id="py-shebang"),
]


@pytest.mark.parametrize(
    ("suffix", "before", "after", "marker"), hostile_everywhere() + INSIDE_STRINGS + LANGUAGE_SPECIFIC
)
def test_a_comment_that_carries_swallows_or_changes_code_is_refused(
    suffix: str, before: str, after: str, marker: str
):
    language = languages.for_suffix(suffix)
    assert language is not None
    assert not adds_only_comments(language, before, after)
    taken = only_documentation(suffix, before, after)
    assert taken is None or marker not in taken, taken


@pytest.mark.parametrize(
    ("suffix", "before"),
    [(".sh", 'echo "\nkept\n"\n'), (".rs", 'let s = r#"\nkept\n"#;\n')],
    ids=["shell-string", "rust-raw-string"],
)
def test_a_line_inserted_in_a_string_is_refused_where_the_nodes_leave_its_line_breaks_out(
    suffix: str, before: str
):
    language = languages.for_suffix(suffix)
    assert language is not None
    after = before.replace("\n", "\n\n", 1)
    assert language.parse(after).code == language.parse(before).code  # the nodes cannot tell
    assert not adds_only_comments(language, before, after)


def test_a_language_whose_comments_are_unknown_takes_nothing():
    assert only_documentation(".xyz", "area w h\n", "; the area\narea w h\n") is None


# --- where Document is offered ---------------------------------------------------------------------


def listed_kinds(uri: str) -> set[str]:
    workspace = LspDocuments.replacing(Workspace(None))
    workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="", version=1, text="area\n"))
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(0, 0), types.Position(1, 0)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    return {action.data["kind"] for action in code_actions.list_actions(workspace, params)}


def test_document_is_offered_only_for_a_language_whose_comments_can_be_checked():
    assert "document" in listed_kinds("file:///project/widget.js")
    unknown = listed_kinds("file:///project/notes.xyz")
    assert "document" not in unknown and {"explain", "refactor"} <= unknown
    assert "document" not in listed_kinds("untitled:Untitled-1")


def test_a_grammar_is_imported_only_when_a_file_of_its_language_is_checked():
    script = (
        "import sys\n"
        "import lsp_server.lsp.server\n"
        "from lsp_server.assistant.rewrite import only_documentation\n"
        "grammars = lambda: sorted({m.split('.')[0] for m in sys.modules if m.startswith('tree_sitter_')})\n"
        "print(grammars())\n"
        "only_documentation('.go', 'package p\\n', '// Package p.\\npackage p\\n')\n"
        "print(grammars())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "['tree_sitter_go']"]
