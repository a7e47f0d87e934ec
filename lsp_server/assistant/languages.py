"""The languages whose comments the server can tell from their code, and all that differs between them.

Document (actions/document.py) may only add comments, and that is decided by a real
tokenizer per language, never by what a line looks like: a line that starts with `/*` and ends with `*/`
can hold code between two comments, and a C comment that ends in a backslash swallows the next line.
This module owns the table: each language's file suffixes, its tree-sitter grammar (an official grammar
wheel, imported the first time a file of that language is checked), its text as the compiler lexes it,
its comment node types, and the comments its tools read as instructions. It is also the one adapter to
tree-sitter: a Parse is what the check in rewrite.py needs of one text. Python is in the table too, but
the standard library's ast and tokenize check it (rewrite.py). A suffix not in the table cannot be
checked, so Document is not offered for it (lsp.code_actions). Next-edit suggestions ask it whether a
changed text still parses. The module also says which files are tests: the ones a check runs, and the
wider set the workspace index counts less.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter

from .edits import split_lines

# What a node of the code is, for comparing code: (depth, type, the text of a leaf). Two texts whose
# comments aside have the same nodes, nested the same way, have the same code; leaves alone would miss
# a comment that splits one shell command in two (`echo a \` + a comment line + `b`: the same words).
CodeNode = tuple[int, str, bytes | None]

# Characters that some language or editor reads as a line end, besides "\n" (and "\r\n"): a comment
# holding one may end early for the compiler, or look longer than it is to the reader.
ODD_LINE_ENDS = re.compile("\r(?!\n)|[\v\f\x1c-\x1e\x85\u2028\u2029]")


def _as_written(text: str) -> str:
    return text


# C and C++ translation phases 1 and 2: the trigraph ??/ is a backslash, and a backslash at the end of a
# line (compilers allow whitespace after it) joins the next line to it, inside comments too.
_SPLICE = re.compile(r"\\[ \t\v\f]*(?:\r\n|\n|\r)")


def _c_as_compiled(text: str) -> str:
    return _SPLICE.sub("", text.replace("??/", "\\"))


# Java reads \uXXXX escapes (any number of u's) before it lexes, in comments too, where the backslash
# is not itself escaped: preceded by an even number of backslashes. An escaped surrogate (half of an
# emoji in a string) stays a lone one here: texts are encoded with surrogatepass (_utf8).
_UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u+([0-9a-fA-F]{4})")


def _java_as_compiled(text: str) -> str:
    return _UNICODE_ESCAPE.sub(lambda m: m.group(1) + chr(int(m.group(2), 16)), text)


@dataclass(frozen=True)
class Language:
    """One language whose comments can be told from its code."""

    name: str  # also the language tag of a fenced code block that holds it
    suffixes: tuple[str, ...]  # lower case, with the dot
    # The tree-sitter grammar: the module of its wheel and the function that returns it. None: Python,
    # which ast and tokenize check (rewrite.py).
    grammar: tuple[str, str] | None
    # The node types of its comments. JavaScript's HTML-like comments (`<!--`, `-->`) are left out on
    # purpose: they are comments in scripts only, and code in modules.
    comment_types: frozenset[str] = frozenset({"comment"})
    # The text as the compiler lexes it, where that differs from the file (C's line splices, Java's
    # unicode escapes): the code is compared on it.
    as_compiled: Callable[[str], str] = _as_written
    # Comments that the compiler or a tool reads as instructions (Go's //go: directives, Ruby's magic
    # comments): never taken as documentation.
    directives: re.Pattern[str] | None = None
    # A text that holds this keeps code in its comments (Go's cgo preamble, C code compiled with the
    # package): none of its comments can be told from code.
    code_in_comments: re.Pattern[str] | None = None

    def parse(self, text: str) -> Parse:
        assert self.grammar is not None, f"{self.name} is checked without tree-sitter"
        parser = tree_sitter.Parser(_grammar(*self.grammar))
        return Parse(text, parser.parse(_utf8(text)), self.comment_types)


def _utf8(text: str) -> bytes:
    """The bytes tree-sitter reads: UTF-8, lone surrogates (from an editor, or Java's escapes) included."""
    return text.encode("utf-8", "surrogatepass")


@functools.cache
def _grammar(module: str, function: str) -> tree_sitter.Language:
    """A grammar, imported the first time it is needed: a server never pays for the others."""
    return tree_sitter.Language(getattr(importlib.import_module(module), function)())


_JS_DIRECTIVES = re.compile(
    # TypeScript's triple-slash directives and @ts- comments, JSX pragmas, source maps, and what bundlers
    # read inside comments (pure calls, webpack's and Vite's magic comments).
    r"^\s*///\s*<|@ts-|@jsx|[#@]\s*source(?:Mapping)?URL|[#@]__(?:PURE|NO_SIDE_EFFECTS)__|webpack[A-Z]|@vite-"
)

LANGUAGES: tuple[Language, ...] = (
    Language("python", (".py",), None),
    Language(
        "javascript",
        (".js", ".jsx", ".mjs", ".cjs"),
        ("tree_sitter_javascript", "language"),
        directives=_JS_DIRECTIVES,
    ),
    Language(
        "typescript",
        (".ts", ".mts", ".cts"),
        ("tree_sitter_typescript", "language_typescript"),
        directives=_JS_DIRECTIVES,
    ),
    Language("tsx", (".tsx",), ("tree_sitter_typescript", "language_tsx"), directives=_JS_DIRECTIVES),
    Language("c", (".c",), ("tree_sitter_c", "language"), as_compiled=_c_as_compiled),
    # Headers: C++'s grammar, which reads C headers too.
    Language(
        "cpp",
        (".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"),
        ("tree_sitter_cpp", "language"),
        as_compiled=_c_as_compiled,
    ),
    Language(
        "java",
        (".java",),
        ("tree_sitter_java", "language"),
        comment_types=frozenset({"line_comment", "block_comment"}),
        as_compiled=_java_as_compiled,
    ),
    Language("csharp", (".cs",), ("tree_sitter_c_sharp", "language")),
    Language(
        "go",
        (".go",),
        ("tree_sitter_go", "language"),
        # //go:build, //go:generate, //go:embed..., //line, cgo's //export, gccgo's //extern, old +build.
        directives=re.compile(r"^\s*(?://|/\*)(?:[a-z0-9]+:\S|line |export |extern )|^\s*//\s*\+build"),
        code_in_comments=re.compile(r'^\s*import\s*(?:\(\s*)?"C"', re.MULTILINE),
    ),
    Language(
        "rust",
        (".rs",),
        ("tree_sitter_rust", "language"),
        comment_types=frozenset({"line_comment", "block_comment"}),
    ),
    Language(
        "ruby",
        (".rb",),
        ("tree_sitter_ruby", "language"),
        # Magic comments change how the file runs: its encoding, frozen string literals, and more.
        directives=re.compile(
            r"^\s*#.*(?:-\*-|coding\s*[:=]|frozen[_-]string[_-]literal|warn[_-]indent|warn[_-]past[_-]scope"
            r"|shareable[_-]constant[_-]value)",
            re.IGNORECASE,
        ),
    ),
    Language("bash", (".sh", ".bash"), ("tree_sitter_bash", "language")),
)

_BY_SUFFIX = {suffix: language for language in LANGUAGES for suffix in language.suffixes}


def for_suffix(suffix: str) -> Language | None:
    """The language of a file suffix (".js"), or None where its comments cannot be told from its code."""
    return _BY_SUFFIX.get(suffix.lower())


def fence_tag(suffix: str) -> str:
    """The language tag of a fenced code block that holds a file of this suffix."""
    language = for_suffix(suffix)
    return language.name if language is not None else suffix.lstrip(".")


def parses(suffix: str, text: str) -> bool | None:
    """Whether a text of this file suffix parses without an error; None where no parser is at hand."""
    language = for_suffix(suffix)
    if language is None:
        return None
    if language.grammar is None:  # Python
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):  # ValueError: a null byte
            return False
        return True
    parser = tree_sitter.Parser(_grammar(*language.grammar))
    return not parser.parse(_utf8(text)).root_node.has_error


class Parse:
    """What the check of a documentation edit needs from one tree-sitter parse of a text: which lines are
    comments, and the code's nodes (the ERROR and MISSING nodes of a text that does not parse included)."""

    def __init__(self, text: str, tree: tree_sitter.Tree, comment_types: frozenset[str]) -> None:
        self.text = text
        self.code: list[CodeNode] = []  # in document order, comments left out
        self._comments: list[tuple[int, int]] = []  # byte spans
        cursor, depth = tree.walk(), 0
        while True:
            node = cursor.node
            assert node is not None
            if node.type in comment_types:
                self._comments.append((node.start_byte, node.end_byte))
            else:
                self.code.append((depth, node.type, node.text if node.child_count == 0 else None))
                if cursor.goto_first_child():
                    depth += 1
                    continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return
                depth -= 1

    def comment_lines(self) -> set[int]:
        """The 0-based indexes (edits.split_lines) of the lines that are comment only: every character
        that is not whitespace lies in a comment, and there is one; or a blank line inside a comment."""
        data = _utf8(self.text)
        in_comment = bytearray(len(data))
        for start, end in self._comments:
            in_comment[start:end] = b"\1" * (end - start)
        found, start = set(), 0
        for index, line in enumerate(split_lines(self.text)):
            end = start + len(_utf8(line))
            code = bytes(
                b for b, inside in zip(data[start:end], in_comment[start:end], strict=True) if not inside
            )
            if not code.strip() and (line.strip() or not code):
                found.add(index)
            start = end
        return found


# ---- Which files are tests ---------------------------------------------------------------------------
# Two questions with two answers, on purpose. Which files hold tests to run is Python's convention, as
# pytest collects by default (test_*.py, *_test.py): the check runs those (checks/discovery.py), and the
# frame of a traceback that lies in one is the failing test's (checks/failures.py); a conftest.py or a
# helper beside the tests runs no test, and a spec in another language is not pytest's to run. Which
# files belong to a project's tests is wider, in any language: the workspace index counts them less
# (codebase.py), since they name the code they test without being it, fixtures and helpers included.
TEST_FOLDERS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__"})


def is_test_file(path: PurePath) -> bool:
    """Whether a file holds tests to run: a Python file named as pytest finds tests by default."""
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def belongs_to_tests(path: str) -> bool:
    """Whether a path (relative, `/`-separated) is part of a project's tests, in any language: in a
    tests folder, named as tests are (test_x.py, x_test.go, x.test.js, x.spec.ts, x_spec.rb), or pytest's
    conftest.py."""
    parts = path.lower().split("/")
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    return (
        any(part in TEST_FOLDERS for part in parts[:-1])
        or stem.startswith("test_")
        or stem.endswith(("_test", ".test", ".spec", "_spec"))
        or name == "conftest.py"
    )
