"""The code a problem report names, which a Fix shows the model: found in the workspace's other files."""

from __future__ import annotations

from pathlib import Path

from lsp_server.assistant import related
from lsp_server.assistant.codebase import CodebaseIndex
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles

MODULE = "def drop_lowest(scores):\n    return sorted(scores)[1:]\n"
TESTS = """import pytest

from grades import drop_lowest


@pytest.mark.slow
def test_drop_lowest_keeps_order():
    assert drop_lowest([3, 1, 2]) == [3, 2]


def test_empty():
    assert drop_lowest([]) == []


class TestMore:
    def test_long(self):
""" + "".join(f"        assert {n} == {n}\n" for n in range(60))


def project(tmp_path: Path) -> Path:
    (tmp_path / "grades.py").write_text(MODULE)
    (tmp_path / "test_grades.py").write_text(TESTS)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_other.py").write_text("def test_empty():\n    pass\n")
    return tmp_path


def test_a_failing_test_named_in_the_report_is_found_with_its_decorator(tmp_path: Path):
    root = project(tmp_path)
    report = "FAILED test_grades.py::test_drop_lowest_keeps_order - assert [2, 3] == [3, 2]"
    [definition] = related.named_definitions([report], WorkspaceFiles([root]), root / "grades.py")
    assert definition.shown_path == "test_grades.py"
    assert definition.line == 6
    assert definition.code.startswith("@pytest.mark.slow\ndef test_drop_lowest_keeps_order():")
    assert definition.code.endswith("== [3, 2]")
    assert definition.as_markdown().startswith("`test_grades.py`, line 6:\n```python\n@pytest")


def test_names_come_in_the_report_s_order_and_the_document_itself_is_left_out(tmp_path: Path):
    root = project(tmp_path)
    reports = ["test_empty failed: drop_lowest([]) raised IndexError", "test_drop_lowest_keeps_order too"]
    found = related.named_definitions(reports, WorkspaceFiles([root]), root / "grades.py")
    # drop_lowest is defined in the document, which the model reads whole already.
    assert [(d.shown_path, d.line) for d in found] == [("test_grades.py", 11), ("test_grades.py", 6)]


def test_a_long_definition_is_cut_and_says_so(tmp_path: Path):
    root = project(tmp_path)
    report = "TestMore.test_long failed"
    [definition] = related.named_definitions([report], WorkspaceFiles([root]), root / "grades.py")
    assert len(definition.code.splitlines()) == related.MAX_LINES + 1
    assert definition.code.endswith(f"# ... ({61 - related.MAX_LINES} more lines)")


def test_nothing_named_nothing_found_and_bad_files_are_skipped(tmp_path: Path):
    root = project(tmp_path)
    (root / "broken.py").write_text("def test_empty(:\n")  # does not parse
    (root / "latin1.py").write_bytes(b"def test_empty():\n    '\xe9'\n")  # not UTF-8
    sandbox = WorkspaceFiles([root])
    assert related.named_definitions(["an error with no names"], sandbox, root / "grades.py") == []
    assert related.named_definitions([""], sandbox, root / "grades.py") == []
    [found] = related.named_definitions(["test_empty failed"], sandbox, root / "grades.py")
    assert found.shown_path == "test_grades.py"  # beside the document, before sub/


def test_at_most_three_definitions(tmp_path: Path):
    root = project(tmp_path)
    (root / "helpers.py").write_text("".join(f"def helper_{n}():\n    pass\n\n\n" for n in range(5)))
    report = " ".join(f"helper_{n}" for n in range(5))
    found = related.named_definitions([report], WorkspaceFiles([root]), root / "grades.py")
    assert [d.code.split("(")[0] for d in found] == ["def helper_0", "def helper_1", "def helper_2"]


# ---- the code a block uses, from the workspace index ---------------------------------------------

PRICES = '''def discount(price, percent):
    """The price less `percent` per cent."""
    return price * (100 - percent) / 100


class Ledger:
    def save(self, path):
        pass
'''
CART = '''from shop.prices import discount, Ledger


def subtotal(items):
    return sum(price for _, price in items)


def total(items, percent):
    """What the cart costs."""
    ledger = Ledger()
    ledger.save("cart.log")
    rounded = round(discount(subtotal(items), percent), 2)
    return store(rounded)
'''
TOTAL = "\n".join(CART.splitlines()[7:]) + "\n"  # `total`, as an action shows it


def shop(tmp_path: Path, stores: int = 1) -> tuple[Path, CodebaseIndex]:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "prices.py").write_text(PRICES)
    (tmp_path / "shop" / "cart.py").write_text(CART)
    for n in range(stores):  # `store` defined in this many files
        (tmp_path / f"backend{n}.py").write_text(f"def store(value):\n    return {n}\n")
    for n in range(3):  # `save` defined in three more files besides the one cart.py imports
        (tmp_path / f"files{n}.py").write_text("def save(path):\n    pass\n")
    index = CodebaseIndex([tmp_path])
    index.build()
    return tmp_path / "shop" / "cart.py", index


def test_a_block_is_shown_the_definitions_it_uses_from_other_files(tmp_path: Path):
    cart, index = shop(tmp_path)
    used = related.used_definitions(TOTAL, cart, CART, index)
    # First used first. Not shown: `subtotal`, cart.py's own (the model reads the file whole); `round`,
    # a builtin; `save`, defined in three files cart.py does not import from (inside Ledger, the class
    # is the definition).
    assert [(d.shown_path, d.line, d.last_line, d.code.splitlines()[0]) for d in used] == [
        ("shop/prices.py", 6, 8, "class Ledger:"),
        ("shop/prices.py", 1, 3, "def discount(price, percent):"),
        ("backend0.py", 1, 2, "def store(value):"),
    ]
    assert used[1].code == PRICES.split("\n\n\n")[0]


def test_a_name_defined_in_too_many_files_is_left_out_and_the_budget_holds(tmp_path: Path):
    cart, index = shop(tmp_path, stores=3)
    assert "store" not in "".join(d.code for d in related.used_definitions(TOTAL, cart, CART, index))
    budget = len(related.used_definitions(TOTAL, cart, CART, index)[0].code)
    assert [d.line for d in related.used_definitions(TOTAL, cart, CART, index, budget)] == [6]


def test_other_languages_and_unparsable_blocks_are_shown_nothing(tmp_path: Path):
    cart, index = shop(tmp_path)
    assert related.used_definitions("discount(1, 2)\n", cart.with_suffix(".js"), CART, index) == []
    assert related.used_definitions("def broken(:\n", cart, CART, index) == []
