"""docs/architecture.md's list of rooms is the package as it is: every module and sub-package under
lsp_server/ is named there, and every module it names exists. Read from the tree, so a module moved or
added fails here until the page says where it went."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "lsp_server"
DOC = ROOT / "docs" / "architecture.md"
# A module or a package as the rooms name them, relative to lsp_server/: `engine/local.py`, `engine/remote/`.
NAMED = re.compile(r"`([A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*(?:\.py|/))`")


def rooms() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"^## The rooms\n(.*?)^### Around the package$", text, flags=re.MULTILINE | re.DOTALL)
    assert found, f"{DOC.name}: no '## The rooms' section ending at '### Around the package'"
    return found[1]


def named() -> set[str]:
    return set(NAMED.findall(rooms()))


def in_the_tree() -> set[str]:
    modules = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    packages = {
        f"{path.parent.relative_to(PACKAGE).as_posix()}/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE and "__pycache__" not in path.parts
    }
    return modules | packages


def test_every_module_and_package_of_lsp_server_is_in_the_rooms() -> None:
    missing = sorted(in_the_tree() - named())
    assert missing == [], f"{DOC.relative_to(ROOT)} does not list: {missing}"


def test_every_module_the_rooms_name_exists() -> None:
    gone = sorted(
        name
        for name in named()
        if not (PACKAGE / name).is_file() and not (PACKAGE / name / "__init__.py").is_file()
    )
    assert gone == [], f"{DOC.relative_to(ROOT)} names modules that are not in lsp_server/: {gone}"


def test_each_module_has_its_own_line_saying_what_it_holds() -> None:
    # A list item, or for a top-level package its heading: "- `lsp/chat.py`: ...", "### `lsp/`: ..."
    items = re.findall(r"^(?:\s*-|###) `([^`]+)`: (\S.*)$", rooms(), flags=re.MULTILINE)
    listed = [name for name, _ in items]
    assert sorted(set(listed)) == sorted(listed), "a module is listed twice"
    assert in_the_tree() <= set(listed), sorted(in_the_tree() - set(listed))
