"""The package's folders are its layers, and imports only point down: engine, assistant, lsp, clients."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lsp_server"
LAYERS = ["engine", "assistant", "lsp", "clients"]  # each may import the ones before it


def imported_layers(path: Path) -> set[str]:
    """The layers a module imports from (relative imports, as the package writes them)."""
    layer = path.parent.name
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level == 1:
                found.add(layer)
            elif node.module:  # from ..assistant.tools import X
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found.update(n.split(".")[1] for n in names if n.startswith("lsp_server.") and n.count(".") >= 1)
    return found & set(LAYERS)


def test_every_module_lives_in_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], f"modules outside the layer folders: {loose}"


def test_imports_only_point_down():
    wrong = []
    for layer in LAYERS:
        allowed = set(LAYERS[: LAYERS.index(layer) + 1])
        for path in sorted((PACKAGE / layer).glob("*.py")):
            upward = imported_layers(path) - allowed
            if upward:
                wrong.append(f"lsp_server/{layer}/{path.name} imports from {sorted(upward)}")
    assert wrong == []


def test_only_the_native_binding_touches_cffi_and_lsp_types_stay_in_the_lsp_layers():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if "import cffi" in text:
            assert path == PACKAGE / "engine" / "native.py", path
        if "lsprotocol" in text or "pygls" in text:
            assert path.parent.name in ("lsp", "clients"), f"{path} uses LSP types below the lsp layer"
