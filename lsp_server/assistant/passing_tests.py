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
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    removed: list[tuple[int, int]] = []  # 0-based line ranges [start, end)
    kept_tests = 0

    def span(node: ast.stmt) -> tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return first - 1, node.end_lineno or node.lineno

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            if (node.name,) in failed:
                removed.append(span(node))
            else:
                kept_tests += 1
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or _is_test_case(node)):
            methods = _test_methods(node)
            failing = [m for m in methods if (node.name, m.name) in failed]
            if methods and len(failing) == len(methods):
                removed.append(span(node))
            else:
                removed.extend(span(m) for m in failing)
                kept_tests += len(methods) - len(failing)
    if kept_tests == 0:
        return None
    dropped = {index for start, end in removed for index in range(start, end)}
    return "".join(line for index, line in enumerate(lines) if index not in dropped)


def count_tests(source: str) -> int:
    """The test functions and methods in `source` (a parametrized one counts once)."""
    count = 0
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or _is_test_case(node)):
            count += len(_test_methods(node))
    return count


def _test_methods(node: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        item
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test")
    ]


def _is_test_case(node: ast.ClassDef) -> bool:
    """A unittest.TestCase subclass, whatever its name."""
    return any(
        (isinstance(base, ast.Attribute) and base.attr == "TestCase")
        or (isinstance(base, ast.Name) and base.id == "TestCase")
        for base in node.bases
    )
