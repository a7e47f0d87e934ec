"""Write tests keeps only the tests that pass on the code as it is: a test that fails there is a wrong
test (or a bug the user did not ask about), and tests that fail on correct code are worse than none.

Reads pytest's report of a check (its "short test summary info" lines, which pytest prints by default)
and removes the failing test functions from the new file. Pure text: the check runs in verify.py.
"""

from __future__ import annotations

import ast
import re

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
    if kept_tests == 0:
        return None
    dropped = {index for start, end in removed for index in range(start, end)}
    lines = source.splitlines(keepends=True)
    return "".join(line for index, line in enumerate(lines) if index not in dropped)


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
