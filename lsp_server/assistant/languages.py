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
wider set the workspace index counts less. And it outlines a file for the workspace index (codebase.py):
its definitions (functions, classes and the like, with their names) and the code between them, from
the same grammars (`Definitions` says which node types are which, per language), and from ast for
Python.
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
class Definitions:
    """The node types of a language's definitions, as the workspace index cuts a file at them (outline):
    the named children of the file's root, and of a container's body, are its items."""

    # Functions, methods and types: each is one item, kept whole however long.
    whole: frozenset[str]
    # Classes, modules, namespaces, impls: whole when short, else cut at the definitions in their body.
    containers: frozenset[str] = frozenset()
    # Nodes that hold a definition (export, template<...>, declare, a type declaration's spec): the
    # definition is their first named child that is one, and its lines are the wrapper's.
    wrappers: frozenset[str] = frozenset()
    # A name bound to a value (`const f = () => ...`, `X.prototype.f = function ...`): a definition
    # when the value is one of function_values.
    bindings: frozenset[str] = frozenset()
    function_values: frozenset[str] = frozenset()
    # Nodes whose items are at the level of the node (#if blocks, extern "C" { ... }).
    transparent: frozenset[str] = frozenset()
    # Nodes that belong to the definition that follows them, besides comments (Rust's #[attributes]).
    attached: frozenset[str] = frozenset()


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
    # Where the workspace index cuts its files; None: Python, which ast outlines.
    definitions: Definitions | None = None

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

_JS_DEFINITIONS = Definitions(
    whole=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
    containers=frozenset({"class_declaration"}),
    wrappers=frozenset(
        {"export_statement", "lexical_declaration", "variable_declaration", "expression_statement"}
    ),
    bindings=frozenset({"variable_declarator", "assignment_expression"}),
    function_values=frozenset({"function_expression", "arrow_function", "generator_function", "class"}),
    attached=frozenset({"decorator"}),
)
# Interfaces, type aliases and enums whole: an interface's members are one-line signatures.
_TS_DEFINITIONS = Definitions(
    whole=_JS_DEFINITIONS.whole | {"interface_declaration", "type_alias_declaration", "enum_declaration"},
    containers=_JS_DEFINITIONS.containers | {"abstract_class_declaration", "internal_module", "module"},
    wrappers=_JS_DEFINITIONS.wrappers | {"ambient_declaration"},
    bindings=_JS_DEFINITIONS.bindings,
    function_values=_JS_DEFINITIONS.function_values,
    attached=_JS_DEFINITIONS.attached,
)
_C_PREPROCESSOR = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
)
_C_DEFINITIONS = Definitions(
    whole=frozenset(
        {"function_definition", "struct_specifier", "union_specifier", "enum_specifier", "type_definition"}
    ),
    transparent=_C_PREPROCESSOR | {"linkage_specification", "declaration_list"},
)
_CPP_DEFINITIONS = Definitions(
    whole=frozenset(
        {
            "function_definition",
            "enum_specifier",
            "type_definition",
            "alias_declaration",
            "concept_definition",
        }
    ),
    containers=frozenset({"class_specifier", "struct_specifier", "union_specifier", "namespace_definition"}),
    wrappers=frozenset({"template_declaration"}),
    transparent=_C_DEFINITIONS.transparent,
)

LANGUAGES: tuple[Language, ...] = (
    Language("python", (".py",), None),
    Language(
        "javascript",
        (".js", ".jsx", ".mjs", ".cjs"),
        ("tree_sitter_javascript", "language"),
        directives=_JS_DIRECTIVES,
        definitions=_JS_DEFINITIONS,
    ),
    Language(
        "typescript",
        (".ts", ".mts", ".cts"),
        ("tree_sitter_typescript", "language_typescript"),
        directives=_JS_DIRECTIVES,
        definitions=_TS_DEFINITIONS,
    ),
    Language(
        "tsx",
        (".tsx",),
        ("tree_sitter_typescript", "language_tsx"),
        directives=_JS_DIRECTIVES,
        definitions=_TS_DEFINITIONS,
    ),
    Language(
        "c", (".c",), ("tree_sitter_c", "language"), as_compiled=_c_as_compiled, definitions=_C_DEFINITIONS
    ),
    # Headers: C++'s grammar, which reads C headers too.
    Language(
        "cpp",
        (".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"),
        ("tree_sitter_cpp", "language"),
        as_compiled=_c_as_compiled,
        definitions=_CPP_DEFINITIONS,
    ),
    Language(
        "java",
        (".java",),
        ("tree_sitter_java", "language"),
        comment_types=frozenset({"line_comment", "block_comment"}),
        as_compiled=_java_as_compiled,
        definitions=Definitions(
            whole=frozenset(
                {
                    "method_declaration",
                    "constructor_declaration",
                    "compact_constructor_declaration",
                    "enum_declaration",
                    "annotation_type_declaration",
                }
            ),
            containers=frozenset({"class_declaration", "interface_declaration", "record_declaration"}),
        ),
    ),
    Language(
        "csharp",
        (".cs",),
        ("tree_sitter_c_sharp", "language"),
        # Properties are left to the code between definitions: most are one line (`{ get; set; }`).
        definitions=Definitions(
            whole=frozenset(
                {
                    "method_declaration",
                    "constructor_declaration",
                    "destructor_declaration",
                    "operator_declaration",
                    "conversion_operator_declaration",
                    "enum_declaration",
                    "delegate_declaration",
                }
            ),
            containers=frozenset(
                {
                    "class_declaration",
                    "struct_declaration",
                    "interface_declaration",
                    "record_declaration",
                    "namespace_declaration",
                }
            ),
        ),
    ),
    Language(
        "go",
        (".go",),
        ("tree_sitter_go", "language"),
        # //go:build, //go:generate, //go:embed..., //line, cgo's //export, gccgo's //extern, old +build.
        directives=re.compile(r"^\s*(?://|/\*)(?:[a-z0-9]+:\S|line |export |extern )|^\s*//\s*\+build"),
        code_in_comments=re.compile(r'^\s*import\s*(?:\(\s*)?"C"', re.MULTILINE),
        definitions=Definitions(
            whole=frozenset({"function_declaration", "method_declaration", "type_spec", "type_alias"}),
            wrappers=frozenset({"type_declaration"}),
        ),
    ),
    Language(
        "rust",
        (".rs",),
        ("tree_sitter_rust", "language"),
        comment_types=frozenset({"line_comment", "block_comment"}),
        definitions=Definitions(
            whole=frozenset(
                {"function_item", "struct_item", "enum_item", "union_item", "type_item", "macro_definition"}
            ),
            containers=frozenset({"impl_item", "trait_item", "mod_item"}),
            attached=frozenset({"attribute_item"}),
        ),
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
        definitions=Definitions(
            whole=frozenset({"method", "singleton_method"}),
            containers=frozenset({"class", "module", "singleton_class"}),
        ),
    ),
    Language(
        "bash",
        (".sh", ".bash"),
        ("tree_sitter_bash", "language"),
        definitions=Definitions(whole=frozenset({"function_definition"})),
    ),
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


# ---- Outlines: where the workspace index cuts a file ----------------------------------------------------


@dataclass(frozen=True)
class Item:
    """A node of a file as the workspace index cuts it (codebase.py): a definition, or code between
    definitions (name None)."""

    start_line: int  # 1-based; a definition's comments and attributes just above it included
    end_line: int  # inclusive
    name: str | None = None  # a definition's, as written (`Parser.parse`, `Server.Serve`)
    container: bool = False  # a class or the like, whose body's definitions may be cut out of it
    members: tuple[Item, ...] = ()  # a container's body's items


def outline(suffix: str, text: str) -> list[Item] | None:
    """A file's top-level items in order, from one parse; None where its language has no outline or the
    text does not parse as Python (the index then cuts it in windows of lines)."""
    language = for_suffix(suffix)
    if language is None:
        return None
    if language.grammar is None:  # Python
        try:
            return [_python_item(node) for node in ast.parse(text).body]
        except (SyntaxError, ValueError, RecursionError):  # ValueError: a null byte
            return None
    if language.definitions is None:
        return None
    tree = tree_sitter.Parser(_grammar(*language.grammar)).parse(_utf8(text))
    return _Outliner(language.definitions, language.comment_types).items(tree.root_node.named_children)


def _python_item(node: ast.stmt) -> Item:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(decorator.lineno for decorator in decorators)])
    end = node.end_lineno or node.lineno
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return Item(start, end, node.name)
    if isinstance(node, ast.ClassDef):
        return Item(start, end, node.name, True, tuple(map(_python_item, node.body)))
    return Item(start, end)


# A name's node of these types is written with its scope (`Parser::parse`, Ruby's `A::B`): kept whole.
_SCOPED_NAMES = frozenset(
    {"qualified_identifier", "scope_resolution", "scoped_identifier", "scoped_type_identifier"}
)
# Where a definition's name is, in every grammar of the table: its name; a C declarator (through
# pointers and parameter lists); a member assigned to (`X.prototype.f = `); an impl's type (Rust).
_NAME_FIELDS = ("name", "declarator", "property", "left", "type")
_MAX_NAME_CHARS = 200


class _Outliner:
    def __init__(self, definitions: Definitions, comment_types: frozenset[str]) -> None:
        self.definitions = definitions
        self.comment_types = comment_types

    def items(self, nodes: list[tree_sitter.Node]) -> list[Item]:
        found: list[Item] = []
        above: list[tree_sitter.Node] = []  # comments and attributes not yet placed
        for node in nodes:
            if node.type in self.comment_types or node.type in self.definitions.attached:
                above.append(node)
                continue
            if node.type in self.definitions.transparent:
                found += [Item(*_lines(comment)) for comment in above]
                above = []
                found += self.items(node.named_children)
                continue
            items = self._items_of(node)
            start = items[0].start_line if items else 0
            attached = 0  # the comments right above a definition, no blank line between, are its own
            if items and items[0].name is not None and len(items) == 1:
                while attached < len(above) and _lines(above[-1 - attached])[1] >= start - 1:
                    start = _lines(above[-1 - attached])[0]
                    attached += 1
                items[0] = Item(start, items[0].end_line, items[0].name, items[0].container, items[0].members)
            found += [Item(*_lines(comment)) for comment in above[: len(above) - attached]]
            found += items
            above = []
        return found + [Item(*_lines(comment)) for comment in above]

    def _items_of(self, node: tree_sitter.Node) -> list[Item]:
        start, end = _lines(node)
        definition = self._definition(node)
        # tree-sitter recovers from a parse error (C's macros make many), but a function around one may
        # end anywhere (a missing brace takes the rest of the file): its lines are cut as plain code.
        # A container's members are looked at one by one.
        if definition is None or (
            definition.has_error and definition.type not in self.definitions.containers
        ):
            return [Item(start, end)]
        name = _name(definition)
        if definition.type in self.definitions.containers:
            body = definition.child_by_field_name("body")
            if body is None:  # a declaration (`mod tests;`)
                return [Item(start, end)]
            members = self.items(body.named_children)
            if name is None:  # C++'s anonymous namespace: its items are this level's
                return members
            return [Item(start, end, name, True, tuple(members))]
        return [Item(start, end, name)]

    def _definition(self, node: tree_sitter.Node) -> tree_sitter.Node | None:
        """The node that defines something, `node` or one it wraps; None where it defines nothing."""
        definitions = self.definitions
        if node.type in definitions.whole or node.type in definitions.containers:
            return node
        if node.type in definitions.wrappers:
            for child in node.named_children:
                if (found := self._definition(child)) is not None:
                    return found
        if node.type in definitions.bindings:
            value = node.child_by_field_name("value") or node.child_by_field_name("right")
            if value is not None and value.type in definitions.function_values:
                return node
        return None


def _lines(node: tree_sitter.Node) -> tuple[int, int]:
    """A node's first and last lines, 1-based (one that ends with its line's newline ends on that line)."""
    start, end = node.start_point, node.end_point
    return start.row + 1, max(start.row + 1, end.row + (1 if end.column else 0))


def _name(definition: tree_sitter.Node) -> str | None:
    """A definition's name, with the type a Go method is declared on (`Server.Serve`); None for an
    anonymous one."""
    node = _name_node(definition)
    if node is None or node.text is None:
        return None
    name = _written_name(node.text)
    receiver = definition.child_by_field_name("receiver")  # Go: func (s *Server) Serve()
    if receiver is not None and receiver.named_children:
        kind = receiver.named_children[0].child_by_field_name("type")
        while kind is not None and kind.type in ("pointer_type", "generic_type"):
            kind = kind.child_by_field_name("type") or next(iter(kind.named_children), None)
        if kind is not None and kind.text is not None:
            name = f"{_written_name(kind.text)}.{name}"
    return name if name and len(name) <= _MAX_NAME_CHARS and "\n" not in name else None


def _name_node(node: tree_sitter.Node) -> tree_sitter.Node | None:
    for field in _NAME_FIELDS:
        child = node.child_by_field_name(field)
        if child is not None:
            if child.type in _SCOPED_NAMES:
                return child
            return _name_node(child) or child
    if node.type.endswith("declarator") and node.named_children:  # C++'s `&f()`: its field is unnamed
        return _name_node(node.named_children[-1]) or node.named_children[-1]
    return None


def _written_name(text: bytes) -> str:
    """A name as the index's symbols write it: scopes joined by dots (`Parser::parse`: `Parser.parse`),
    without spaces or quotes (TypeScript's `declare module "x"`)."""
    return re.sub(r"\s+", "", text.decode("utf-8", "replace")).replace("::", ".").strip("\"'")
