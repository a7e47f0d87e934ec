"""Write tests keeps only the tests that pass on the code as it is: a test that fails there is a wrong
test (or a bug the user did not ask about), and tests that fail on correct code are worse than none.

Reads pytest's report of a check (its "short test summary info" lines, which pytest prints by default)
and removes the failing test functions from the new file. Before that, an equality the model expected
wrongly (`assert f(2) == 5` where f(2) is 4) takes the value the code gives, as pytest printed it
(`settle_expected_values`): a small model picks good inputs, but often cannot work out what the code
returns for them, and a test that pins what the code does today still catches what changes it later.
The summary names every value so taken, since it may also be a bug the user wants to know about.
Pure text: the check runs in verify.py.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from .failures import parse_failures

# `FAILED test_x.py::test_name - message`, `ERROR test_x.py::Class::test_name`, `... ::test_p[1-2]`
_OUTCOME = re.compile(r"^(FAILED|ERROR) (?P<file>[^\s:]+)::(?P<test>\S+?)(?:\[\S*\])?(?: - .*)?$", re.M)
_PASSED = re.compile(r"\b(\d+) passed\b")


def failed_tests(output: str, file_name: str) -> set[tuple[str, ...]] | None:
    """The tests of `file_name` that pytest's output reports as failed, each as its path of names
    (("test_a",) or ("TestClass", "test_b")); None when the output does not say which failed (a
    collection error, another file's failure, no summary) or none passed, so that pruning cannot help."""
    failed: set[tuple[str, ...]] = set()
    for match in _OUTCOME.finditer(output):
        if match["file"].rsplit("/", 1)[-1] != file_name:
            return None
        failed.add(tuple(match["test"].split("::")))
    if not failed or not passed_count(output):
        return None
    return failed


def passed_count(output: str) -> int | None:
    """How many tests pytest's output reports as passed; None when it does not say."""
    counts = _PASSED.findall(output)  # the last: pytest's summary line ends the output
    return int(counts[-1]) if counts else None


def without_tests(source: str, failed: set[tuple[str, ...]]) -> str | None:
    """`source` without the test functions (and methods) in `failed`; a class left with no test method
    goes too. None when no test would be left."""
    removed: list[tuple[int, int]] = []  # 0-based line ranges [start, end)
    kept_tests = 0
    for node, methods in _tests(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            if (node.name,) in failed:
                removed.append(_span(node))
            else:
                kept_tests += 1
            continue
        failing = [m for m in methods if (node.name, m.name) in failed]
        if methods and len(failing) == len(methods):
            removed.append(_span(node))
        else:
            removed.extend(_span(m) for m in failing)
            kept_tests += len(methods) - len(failing)
    return _without_lines(source, removed) if kept_tests else None


def without_redefined_tests(source: str) -> str:
    """`source` without the tests defined again further down under the same name (in the same module or
    class): only the last runs, and the others are dead code that reads as tests. Models repeat a test
    whole when they lose track of the file."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    removed: list[tuple[int, int]] = []
    for body in [
        tree.body,
        *(node.body for node, _methods in _tests(tree) if isinstance(node, ast.ClassDef)),
    ]:
        tests = [node for node in body if isinstance(node, _Function) and node.name.startswith("test")]
        last = {node.name: node for node in tests}
        removed.extend(_span(node) for node in tests if last[node.name] is not node)
    return _without_lines(source, removed)


def with_missing_imports(source: str, module_source: str, module: str) -> str:
    """`source`, a test file for the module `module` (whose code is `module_source`), with an import for
    each name it uses but never binds that the module binds at its top: `from module import Expense`
    for the module's own definitions, the module's own import statement for a name it imports
    (`from decimal import Decimal`); and for the module itself and the test frameworks. Models writing
    tests often use these names without importing them."""
    try:
        tree, module_tree = ast.parse(source), ast.parse(module_source)
    except (SyntaxError, ValueError):
        return source
    module_path = _module_path(tree, module)
    parent, _, last = module_path.rpartition(".")
    imported_as = {
        "pytest": "import pytest",
        "unittest": "import unittest",
        last: f"from {parent} import {last}" if parent else f"import {last}",
        **_import_lines(module_tree, module_path),
    }
    missing = sorted(_names_used(tree) - _names_bound_anywhere(tree) - set(dir(builtins)))
    added = list(dict.fromkeys(imported_as[name] for name in missing if name in imported_as))
    if not added:
        return source
    lines = source.splitlines(keepends=True)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    at = (imports[-1].end_lineno or imports[-1].lineno) if imports else _after_docstring(tree)
    return "".join([*lines[:at], *(f"{line}\n" for line in added), *lines[at:]])


def _module_path(tree: ast.Module, module: str) -> str:
    """How the test file imports the module named `module` (`pkg.budget`, or `budget` itself)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and (node.module == module or node.module.endswith(f".{module}"))
        ):
            return node.module
    return module


def _import_lines(module_tree: ast.Module, module_path: str) -> dict[str, str]:
    """For each name the module binds at its top, the import statement that gives a test that name."""
    lines: dict[str, str] = {}
    for node in module_tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                lines[(alias.asname or alias.name).split(".")[0]] = ast.unparse(ast.Import(names=[alias]))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:  # a relative one means another place
            for alias in node.names:
                if alias.name != "*":
                    lines[alias.asname or alias.name] = ast.unparse(
                        ast.ImportFrom(module=node.module, names=[alias], level=0)
                    )
        else:
            for name in _top_level_names(node):
                if not name.startswith("_"):
                    lines[name] = f"from {module_path} import {name}"
    return lines


def _top_level_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [target.id for target in targets if isinstance(target, ast.Name)]
    return []


def _names_used(tree: ast.Module) -> set[str]:
    return {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _names_bound_anywhere(tree: ast.Module) -> set[str]:
    """Every name the file binds, in any scope: a name bound anywhere is taken as known everywhere (the
    side that never adds a wrong import)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _after_docstring(tree: ast.Module) -> int:
    """The 0-based line after the module's docstring (0 when it has none)."""
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.end_lineno or first.lineno
    return 0


def _without_lines(source: str, removed: list[tuple[int, int]]) -> str:
    """`source` without the 0-based line ranges [start, end) in `removed`."""
    dropped = {index for start, end in removed for index in range(start, end)}
    lines = source.splitlines(keepends=True)
    return "".join(line for index, line in enumerate(lines) if index not in dropped)


@dataclass(frozen=True)
class SettledValue:
    """An expected value of a new test that the code did not give, replaced by the one it gave."""

    test: str  # pytest's id: test_x.py::test_total
    line: int  # 1-based, in the test file
    expected: str  # as the model wrote it
    given: str  # the code's result, as written into the test now

    def __str__(self) -> str:
        return f"{self.test} (line {self.line}): expected {self.expected}, the code gives {self.given}"


# pytest prints `assert <left> == <right>` for a failed `assert a == b`, and unittest's assertEqual
# `AssertionError: <first> != <second>`; both with the values' reprs.
_ASSERT_EQUAL_METHODS = ("assertEqual", "assertEquals")
# pytest shortens a long repr in the middle with "...", unittest with "[42 chars]": not the value.
_SHORTENED = "..."
_UNITTEST_SHORTENED = re.compile(r"\[\d+ chars\]")
# unittest's assertEqual of two lists (tuples, sequences) says so first: `Lists differ: [1] != [2]`.
_UNITTEST_SEQUENCES = re.compile(r"^(?:Lists|Tuples|Sequences) differ: ")


def settle_expected_values(source: str, output: str, file_name: str) -> tuple[str, list[SettledValue]]:
    """`source` with each failing equality of the new test file `file_name` whose expected side is a value
    written out (`assert f(2) == 5`, `self.assertEqual(f(2), Decimal("2.10"))`) set to the value the other
    side had, as the short traceback (pytest's `--tb=short`) in `output` shows it; and those values. Only
    the failing assertion of each test shows, so a test with more than one wrong runs again (verify.py)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source, []
    bound = _names_bound(tree)
    lines = source.splitlines(keepends=True)
    settled: list[SettledValue] = []
    replacements: list[tuple[ast.expr, str]] = []
    for failure in parse_failures(output, ""):
        site = failure.frames[-1] if failure.frames else None  # where it failed: in the test itself
        if site is None or site.path.rsplit("/", 1)[-1] != file_name or "[" in failure.test:
            continue  # not in the test itself; or parametrized, where the values differ by parameter
        shown, sides = _shown_equality(failure.message), _asserted_sides(tree, site.line)
        if shown is None or sides is None:
            continue
        # The expected side is the one written as it shows; the other is computed.
        written_as_shown = [
            ast.dump(side) == ast.dump(value) for side, value in zip(sides, shown, strict=True)
        ]
        if written_as_shown == [False, True]:
            expected, given = sides[1], shown[0]
        elif written_as_shown == [True, False]:
            expected, given = sides[0], shown[1]
        else:
            continue  # not the assertion the report shows, or both sides (or neither) written out
        text = ast.get_source_segment(source, expected) or ""
        given_text = _written_out(given, bound, text)
        if given_text is None:
            continue
        replacements.append((expected, given_text))
        settled.append(SettledValue(failure.test, site.line, text, given_text))
    for node, text in sorted(replacements, key=lambda r: (r[0].lineno, r[0].col_offset), reverse=True):
        lines = _replaced(lines, node, text)
    return "".join(lines), settled


def _shown_equality(message: str) -> tuple[ast.expr, ast.expr] | None:
    """The two values a failed equality shows, (first, second) as written in the assertion; None when
    the message is not one."""
    for line in message.splitlines():
        line = _UNITTEST_SEQUENCES.sub("", line.strip().removeprefix("AssertionError: "), count=1)
        pytest_style = line.startswith("assert ")
        try:
            compare = ast.parse(line.removeprefix("assert "), mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if (
            isinstance(compare, ast.Compare)
            and len(compare.ops) == 1
            and isinstance(compare.ops[0], ast.Eq if pytest_style else ast.NotEq)
            and not _shortened(line)
        ):
            return compare.left, compare.comparators[0]
    return None


def _asserted_sides(tree: ast.Module, line: int) -> tuple[ast.expr, ast.expr] | None:
    """The two sides of the equality asserted by the statement that starts at `line`; None when there
    is none there."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assert, ast.Expr)) or node.lineno != line:
            continue
        value = node.test if isinstance(node, ast.Assert) else node.value
        if isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.Eq):
            return value.left, value.comparators[0]
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _ASSERT_EQUAL_METHODS
            and len(value.args) == 2
        ):
            return value.args[0], value.args[1]
        return None
    return None


def _shortened(shown: str) -> bool:
    """Whether a report shortened a value: pytest's "..." in the middle of a repr, unittest's "[42 chars]"."""
    return _SHORTENED in shown or _UNITTEST_SHORTENED.search(shown) is not None


def _written_out(given: ast.expr, bound: set[str], expected_text: str) -> str | None:
    """The source of the value `given` as the test can write it: a literal, or a call of a constructor
    the test module knows with such values (`Decimal('1.89')`); None when it is neither."""
    if not _is_value(given, bound):
        return None
    text = ast.unparse(given)
    if isinstance(given, ast.Constant) and isinstance(given.value, str) and expected_text.startswith('"'):
        return _in_double_quotes(text)
    return text


def _is_value(node: ast.expr, bound: set[str]) -> bool:
    """Whether `node` writes a value out: literals, containers of values, and calls of a name the module
    binds (or a builtin) with values (`Decimal('1.89')`, `datetime.date(2024, 1, 2)`)."""
    if isinstance(node, ast.Call):
        root = node.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return (
            isinstance(root, ast.Name)
            and (root.id in bound or hasattr(builtins, root.id))
            and all(_is_value(arg, bound) for arg in node.args)
            and all(_is_value(keyword.value, bound) for keyword in node.keywords)
        )
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_is_value(element, bound) for element in node.elts)
    if isinstance(node, ast.Dict):
        return all(
            key is not None and _is_value(key, bound) and _is_value(value, bound)
            for key, value in zip(node.keys, node.values, strict=True)
        )
    try:
        ast.literal_eval(node)  # a constant, a negative or complex number
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _names_bound(tree: ast.Module) -> set[str]:
    """The names the module binds at its top: imports, definitions, assignments."""
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        else:
            bound.update(_top_level_names(node))
    return bound


def _in_double_quotes(text: str) -> str:
    """A string's repr in double quotes, as the model wrote it (repr uses single ones)."""
    if text.startswith("'") and '"' not in text:
        return '"' + text[1:-1] + '"'  # its escapes serve in either quotes
    return text


def _replaced(lines: list[str], node: ast.expr, text: str) -> list[str]:
    """`lines` with the source of `node` replaced by `text` (positions from ast: UTF-8 byte offsets)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    head = lines[first].encode()[: node.col_offset].decode()
    tail = lines[last].encode()[node.end_col_offset :].decode()
    return [*lines[:first], head + text + tail, *lines[last + 1 :]]


# Where a definition starts, at the top or in a class: where an answer cut short can be cut back to.
_DEFINITION_START = re.compile(r"^[ \t]{0,8}(?:async def |def |class |@)")


def complete_tests(source: str) -> str:
    """`source` without the definition it was cut off in (by the token limit: a test file is long, and one
    that ends mid-test does not parse), where what comes before it parses and has a test; else `source`.

    Models writing tests sometimes go on and on with more cases until the limit stops them: the tests
    they finished are as good as any."""
    try:
        ast.parse(source)
        return source
    except (SyntaxError, ValueError):
        pass
    lines = source.splitlines(keepends=True)
    for cut in reversed([i for i, line in enumerate(lines) if i and _DEFINITION_START.match(line)]):
        candidate = "".join(lines[:cut]).rstrip() + "\n"
        try:
            if _tests(ast.parse(candidate)):
                return candidate
        except (SyntaxError, ValueError):
            continue
    return source


def count_tests(source: str) -> int:
    """The test functions and methods in `source` (a parametrized one counts once)."""
    tests = _tests(ast.parse(source))
    return sum(len(methods) if isinstance(node, ast.ClassDef) else 1 for node, methods in tests)


_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _tests(tree: ast.Module) -> list[tuple[_Function | ast.ClassDef, list[_Function]]]:
    """The module's test functions (with no methods) and test classes (with their test methods), as
    pytest collects them: `test*` functions, and `Test*` classes or unittest TestCases."""
    found: list[tuple[_Function | ast.ClassDef, list[_Function]]] = []
    for node in tree.body:
        if isinstance(node, _Function) and node.name.startswith("test"):
            found.append((node, []))
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or _is_test_case(node)):
            methods = [m for m in node.body if isinstance(m, _Function) and m.name.startswith("test")]
            found.append((node, methods))
    return found


def _span(node: ast.stmt) -> tuple[int, int]:
    """A definition's 0-based line range [start, end), its decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first - 1, node.end_lineno or node.lineno


def _is_test_case(node: ast.ClassDef) -> bool:
    """A unittest.TestCase subclass, whatever its name."""
    return any(
        (isinstance(base, ast.Attribute) and base.attr == "TestCase")
        or (isinstance(base, ast.Name) and base.id == "TestCase")
        for base in node.bases
    )
