"""The package's folders are its layers, and imports only point down: engine, assistant, lsp, clients."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lsp_server"
LAYERS = ["engine", "assistant", "lsp", "clients"]  # each may import the ones before it


def imported_layers(path: Path) -> set[str]:
    """The layers a module imports from (relative imports, as the package writes them); a module of a
    sub-package (engine/remote/sse.py) counts from its own folder."""
    package = path.relative_to(PACKAGE).parent.parts  # ("engine", "remote")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            # from ..assistant.tools import X (in lsp/), from ..api import X (in engine/remote/)
            target = [*package[: max(len(package) - node.level + 1, 0)], *(node.module or "").split(".")]
            found.update(target[:1] if target[0] else [])
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
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            upward = imported_layers(path) - allowed
            if upward:
                wrong.append(f"{path.relative_to(ROOT)} imports from {sorted(upward)}")
    assert wrong == []


def test_only_the_native_binding_touches_cffi_and_lsp_types_stay_in_the_lsp_layers():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if "import cffi" in text:
            assert path == PACKAGE / "engine" / "native.py", path
        if "lsprotocol" in text or "pygls" in text:
            assert path.parent.name in ("lsp", "clients"), f"{path} uses LSP types below the lsp layer"


ROOT = PACKAGE.parent
# The only modules that may touch pygls's private names: the layer under pygls (lsp/rpc*.py) and the
# document model that fixes pygls's line splitting (lsp/text_document.py, docs/upstream-pygls.md).
# pyproject.toml pins pygls to the minor version they were written against.
PYGLS_BOUNDARY = [*PACKAGE.glob("lsp/rpc*.py"), PACKAGE / "lsp" / "text_document.py"]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def on_self(node: ast.Attribute) -> bool:
    """`self.x` or `cls.x`: a class's own attribute, inherited ones included."""
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def pygls_private_names() -> set[str]:
    """The private names of pygls's classes: the methods they define and the attributes their code uses
    on self or cls (instance attributes, which dir() of a class does not list)."""
    import pygls

    names: set[str] = set()
    for path in Path(pygls.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = [
                    item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                names.update(method.name for method in methods)
            elif isinstance(node, ast.Attribute) and on_self(node):
                names.add(node.attr)
    return {name for name in names if is_private(name)}


def pygls_subclasses(tree: ast.Module) -> list[ast.ClassDef]:
    """The classes of a module that derive from a class it imports from pygls."""
    from_pygls = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pygls")
        for alias in node.names
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id in from_pygls for base in node.bases)
    ]


def private_pygls_accesses(path: Path, private_names: set[str]) -> list[str]:
    """`owner._name` where the name is one of pygls's: on any owner but the class's own self or cls, and
    in a subclass of a pygls class also on self (an override or a read of pygls's own state)."""
    tree = ast.parse(path.read_text())
    inherited = {
        id(node)
        for cls in pygls_subclasses(tree)
        for node in ast.walk(cls)
        if isinstance(node, ast.Attribute | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            touched = node.attr in private_names and (not on_self(node) or id(node) in inherited)
            if touched:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            overridden = node.name in private_names and id(node) in inherited
            if overridden:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: def {node.name} (an override)")
    return found


def test_pygls_private_names_are_collected():
    names = pygls_private_names()
    assert {"_workspace", "_shutdown", "_server", "_send_data", "_execute_handler"} <= names


def test_the_private_name_rule_sees_overrides_and_reads_of_pygls_state():
    found = private_pygls_accesses(PACKAGE / "lsp" / "text_document.py", pygls_private_names())
    assert any("def _apply_incremental_change" in access for access in found), found
    assert any("self._source" in access for access in found), found


def test_only_the_pygls_boundary_touches_private_names_of_pygls():
    private_names = pygls_private_names()
    scanned = [*PACKAGE.rglob("*.py"), *(ROOT / "bench").rglob("*.py"), *(ROOT / "eval").rglob("*.py")]
    found = [
        access
        for path in sorted(scanned)
        if path not in PYGLS_BOUNDARY
        for access in private_pygls_accesses(path, private_names)
    ]
    assert found == [], "give each a public function in lsp/rpc*.py: " + "; ".join(found)


def absolute_imports(path: Path) -> set[str]:
    """The modules a file imports by absolute name (`import x.y`, `from x.y import z`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def test_bench_and_eval_never_import_from_tests():
    """What they share with the tests (llama-server, the tiny model) lives in harness/."""
    scanned = [*(ROOT / "bench").rglob("*.py"), *(ROOT / "eval").rglob("*.py")]
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted(scanned)
        for name in sorted(absolute_imports(path))
        if name.split(".")[0] == "tests"
    ]
    assert wrong == []
