"""The published MCP servers the tests, `make eval-mcp` and `make bench` run, as users configure them, and
the workspace they run on.

`make published-mcp` installs them, pinned: the reference memory and filesystem servers from npm
(tests/published_mcp/package.json and its lock), the git and time servers from PyPI in a venv of their own
(tests/published_mcp/requirements.txt; they bring their own MCP SDK). The workspace is a small git
repository written here (three commits on `main`, a branch `feature/export` with one more, a staged and an
unstaged change), the memory server's knowledge graph a file seeded here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / "tests" / "published_mcp" / "node_modules" / ".bin"
PYTHON_BIN = ROOT / "build" / "published-mcp" / "bin"
SERVERS = ("git", "time", "memory")  # the order a configuration lists them in
FILESYSTEM_SERVER = NPM_BIN / "mcp-server-filesystem"  # the tests' published server
COMMANDS = (PYTHON_BIN / "mcp-server-git", PYTHON_BIN / "mcp-server-time", NPM_BIN / "mcp-server-memory")

FILES = {
    "inventory.py": '''"""Stock levels of the shop's items."""

from pricing import apply_discount


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, name, qty, price):
        # TODO: refuse a negative qty
        self.items[name] = (self.items.get(name, (0, price))[0] + qty, price)

    def value(self, discount=0):
        return sum(apply_discount(qty * price, discount) for qty, price in self.items.values())
''',
    "pricing.py": '''"""Prices and discounts."""

DEFAULT_CURRENCY = "USD"


def apply_discount(amount, percent):
    """The amount less `percent` percent."""
    return amount * (100 - percent) / 100


def format_price(amount, currency=DEFAULT_CURRENCY):
    # TODO: use the locale's separators
    return f"{amount:.2f} {currency}"
''',
    "README.md": "# shop\n\nStock and prices of a small shop. Run the tests with `pytest`.\n",
}
MEMORY = [
    {
        "type": "entity",
        "name": "payments-service",
        "entityType": "service",
        "observations": ["owned by Dana Kim", "deploys on Tuesdays"],
    },
    {
        "type": "entity",
        "name": "legacy-exporter",
        "entityType": "service",
        "observations": ["retired in 2025"],
    },
    {
        "type": "entity",
        "name": "deployment-checklist",
        "entityType": "document",
        "observations": ["run the migrations before deploying", "deployments need two approvals"],
    },
    {"type": "relation", "from": "payments-service", "to": "deployment-checklist", "relationType": "follows"},
]


def same_folder_every_run(name: str) -> Path:
    """An empty folder `$TMPDIR/<name>`, at the same path every run (what an earlier run left there is
    removed), for a workspace that chats offered MCP tools run in: their system prompt names the
    workspace folder, and greedy answers follow its tokens, so in a new temporary folder each run would
    ask another prompt and single answers would pass or fail by the folder's name. One run at a time."""
    folder = Path(tempfile.gettempdir()) / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Eval", "-c", "user.email=eval@example.invalid", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def make_workspace(folder: Path) -> None:
    """A git repository: three commits on main, a branch feature/export with one more, then a staged
    change to pricing.py and an unstaged one to inventory.py."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    for name in ("README.md", "pricing.py", "inventory.py"):
        (folder / name).write_text(FILES[name])
        git(folder, "add", name)
        git(folder, "commit", "-q", "-m", f"Add {name}")
    git(folder, "checkout", "-q", "-b", "feature/export")
    (folder / "export.py").write_text("import csv\n\n\ndef export(inventory, path):\n    pass\n")
    git(folder, "add", "export.py")
    git(folder, "commit", "-q", "-m", "Export the inventory to CSV")
    git(folder, "checkout", "-q", "main")
    (folder / "pricing.py").write_text(FILES["pricing.py"].replace("/ 100", "/ 100.0"))
    git(folder, "add", "pricing.py")
    (folder / "inventory.py").write_text(
        FILES["inventory.py"].replace("self.items = {}", "self.items = {}  # name -> (qty, price)")
    )


def server_configs(names: tuple[str, ...], workspace: Path, memory_file: Path) -> dict[str, Any]:
    """`mcpServers` as a user writes it, for the servers named."""
    every = {
        "git": {"command": str(PYTHON_BIN / "mcp-server-git"), "args": ["--repository", str(workspace)]},
        "time": {
            "command": str(PYTHON_BIN / "mcp-server-time"),
            "args": ["--local-timezone", "Europe/Berlin"],
        },
        "memory": {
            "command": str(NPM_BIN / "mcp-server-memory"),
            "env": {"MEMORY_FILE_PATH": str(memory_file)},
        },
    }
    return {name: every[name] for name in SERVERS if name in names}


def seed_memory(memory_file: Path) -> None:
    memory_file.write_text("".join(json.dumps(line) + "\n" for line in MEMORY))


def missing() -> str | None:
    """What is not installed, and the command that installs it; None when all is."""
    for path in COMMANDS:
        if not path.exists():
            return f"{path} is missing: run `make published-mcp`"
    return None
