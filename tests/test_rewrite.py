"""The block-rewrite edit format: which lines a rewrite covers, finding the code, putting it in place."""

from __future__ import annotations

import pytest

from lsp_server.assistant.rewrite import (
    added_documentation,
    code_block,
    documented_by,
    enclosing_block,
    python_code_changed,
    replace_lines,
    the_unit_written,
    undocumented_function,
)

MODULE = '''import math


class Shape:
    """A shape."""

    @property
    def area(self):
        return 0

    def scaled(self, k):
        return self


def distance(a, b):
    dx = a[0] - b[0]
    dy = a[1] - b[1]
    return math.sqrt(dx * dx + dy * dy)
'''


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (16, 16, (15, 18)),  # one line inside a function: the function
        (9, 9, (7, 9)),  # a method: the method with its decorator
        (9, 11, (4, 12)),  # two methods: their class
        (1, 18, (1, 18)),  # the whole file: nothing encloses it, the lines themselves
        (2, 2, (2, 2)),  # a blank line between definitions
    ],
)
def test_a_rewrite_covers_the_smallest_enclosing_function_or_class(first, last, expected):
    assert enclosing_block(MODULE, first, last, python=True) == expected


def test_outside_python_or_on_broken_code_the_selection_is_kept():
    assert enclosing_block(MODULE, 16, 16, python=False) == (16, 16)
    assert enclosing_block("def f(:\n    pass\n", 1, 1, python=True) == (1, 1)


def test_the_code_is_the_longest_fenced_block_or_an_unclosed_one():
    assert code_block("Here:\n```python\nx = 1\n```\nand\n```\ny = 22\nz = 3\n```\n") == "y = 22\nz = 3\n"
    assert code_block("~~~py\nx = 1\n~~~") == "x = 1\n"
    assert code_block("```python\nx = 1\ny = 2") == "x = 1\ny = 2"  # cut by the token limit
    assert code_block("no code here") is None


def test_a_block_written_without_its_class_indentation_is_put_back_in_place():
    block = "@property\ndef area(self):\n    return 1\n"
    after = replace_lines(MODULE, 7, 9, block)
    assert "    @property\n    def area(self):\n        return 1\n\n    def scaled" in after
    assert after.startswith(MODULE[: MODULE.index("    @property")])


def test_a_block_indented_with_spaces_goes_into_a_file_of_tabs_in_tabs():
    tabs = "class Cart:\n\tdef total(self):\n\t\tif self.items:\n\t\t\treturn 1\n\t\treturn 0\n"
    block = "def total(self):\n    if self.items:\n        return 2\n    return 0\n"
    after = replace_lines(tabs, 2, 5, block)
    assert after == tabs.replace("return 1", "return 2")
    compile(after, "cart.py", "exec")


CART = (
    "class Cart:\n    def total(self):\n        return 1\n\n    def clear(self):\n        pass\n\n\n"
    "def helper(x):\n    return x\n"
)


def test_a_method_written_inside_its_class_is_taken_out_of_it():
    block, wrong = the_unit_written(CART, 2, 3, "class Cart:\n    def total(self):\n        return 2\n")
    assert wrong is None
    assert replace_lines(CART, 2, 3, block) == CART.replace("return 1", "return 2")


def test_a_block_that_renames_the_function_or_writes_only_lines_of_it_is_refused_with_the_name():
    _, renamed = the_unit_written(CART, 9, 10, "def helper2(x):\n    return x + 1\n")
    assert renamed is not None and "defines `helper2`" in renamed and "write `helper`" in renamed
    _, fragment = the_unit_written(CART, 9, 10, "return x + 1\n")
    assert fragment is not None and "defines no function" in fragment
    # The function itself, with an import or a helper of its own beside it, is the unit.
    assert the_unit_written(CART, 9, 10, "import os\n\n\ndef helper(x):\n    return x\n")[1] is None


GRADEBOOK = (
    'class Gradebook:\n    @property\n    def kept(self):\n        """The scores that count."""\n'
    "        kept = list(self.scores)\n        kept.sort()\n        return kept[self.dropped + 1 :]\n"
)


def test_a_body_written_without_its_def_goes_under_the_functions_own_signature_and_docstring():
    body = "        kept = list(self.scores)\n        kept.sort()\n        return kept[self.dropped :]\n"
    block, wrong = the_unit_written(GRADEBOOK, 2, 7, body)
    assert wrong is None
    assert replace_lines(GRADEBOOK, 2, 7, block) == GRADEBOOK.replace("self.dropped + 1", "self.dropped")
    # A line or two of the body is not the body: it would delete the rest.
    assert the_unit_written(GRADEBOOK, 2, 7, "return kept[self.dropped :]\n")[1] is not None


def test_replacing_keeps_crlf_and_a_missing_final_newline():
    text = "a = 1\r\nb = 2\r\nc = 3"
    assert replace_lines(text, 2, 3, "b = 20\nc = 30\n\n") == "a = 1\r\nb = 20\r\nc = 30"


def test_only_a_change_beyond_docstrings_counts_as_changing_python_code():
    source = "def f(x):\n    return x + 1\n"
    documented = 'def f(x):\n    """Adds one."""\n    return x + 1\n'
    assert not python_code_changed(source, documented)
    assert python_code_changed(source, documented.replace("+ 1", "+ 2"))


def test_documenting_keeps_the_users_code_lines_and_takes_only_the_models_documentation():
    before = "def area(w, h):\n    return w*h  # as written\n"
    # The model documents, and also retouches the code (spacing, a type hint, its own comment).
    after = 'def area(w: float, h):\n    """The area."""\n    # width times height\n    return w * h\n'
    merged = added_documentation(before, after)
    assert (
        merged
        == 'def area(w, h):\n    """The area."""\n    # width times height\n    return w*h  # as written\n'
    )


def test_documentation_that_cannot_be_taken_alone_is_refused():
    assert added_documentation("x = 1\n", "x = (\n") is None  # does not parse
    # A change of code with no documentation to take leaves nothing that differs from before.
    assert added_documentation("x = 1\n", "x = 2\n") == "x = 1\n"


def test_a_comment_put_at_the_end_of_a_code_line_is_taken_too():
    before = "def area(w, h):\n    return w*h\n"
    after = "def area(w, h):\n    return w*h  # width times height\n"
    assert added_documentation(before, after) == after


DOCUMENTED = """import math


class Circle:
    def __init__(self, radius):
        self.radius = radius

    def area(self, digits=2):
        value = math.pi * self.radius**2
        return round(value, digits)
"""


def test_a_docstring_alone_goes_under_the_functions_signature_and_nothing_else_changes():
    first, last = 8, 10  # Circle.area
    assert undocumented_function(DOCUMENTED, first, last) == "area"
    expected = (
        "    def area(self, digits=2):\n"
        '        """The area of the circle.\n\n        Rounded to `digits` places.\n        """\n'
        "        value = math.pi * self.radius**2\n        return round(value, digits)\n"
    )
    # The docstring alone, as a model writes it at the top of a block; or under the `def` line it wrote
    # again, renamed or with a placeholder body: the same edit.
    alone = '"""The area of the circle.\n\nRounded to `digits` places.\n"""\n'
    with_def = (
        'def area(self):\n    """The area of the circle.\n\n'
        '    Rounded to `digits` places.\n    """\n    ...\n'
    )
    assert documented_by(DOCUMENTED, first, last, alone) == expected
    assert documented_by(DOCUMENTED, first, last, with_def) == expected
    # Code, or a function written whole: not a docstring alone (the block is taken as the function).
    assert documented_by(DOCUMENTED, first, last, "value = 1\n") is None
    assert documented_by(DOCUMENTED, first, last, 'def area(self): """On one line."""\n') is None
    whole = with_def.replace("    ...\n", "    return 1\n")
    assert documented_by(DOCUMENTED, first, last, whole) is None
    # A function that has a docstring already, a one-line one, a class: the block is asked for instead.
    assert undocumented_function(expected, 1, 6) is None
    assert undocumented_function("def f(): return 1\n", 1, 1) is None
    assert undocumented_function(DOCUMENTED, 4, 10) is None
    assert documented_by(DOCUMENTED, 4, 10, alone) is None
