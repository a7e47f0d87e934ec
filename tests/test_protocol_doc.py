"""docs/protocol.md against the code: the custom names, the settings and the stats fields it documents are
the ones lsp_server/lsp/protocol.py, the VS Code extension and the Neovim plugin declare, and the reverse.
The doc's tables and the editors' protocol modules are generated (tests/test_protocol_generated.py holds
them and the declared payloads to the server); this holds the prose written around them.

No model and no server: the files are read and parsed as text, so this runs in well under a second.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_server.assistant.conversation import TurnStats
from lsp_server.lsp import protocol, settings
from lsp_server.lsp.turns import StatsBook

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
PY_PROTOCOL = ROOT / "lsp_server" / "lsp" / "protocol.py"
TS_PROTOCOL = ROOT / "editors" / "vscode" / "src" / "protocol.ts"
LUA_PROTOCOL = ROOT / "editors" / "nvim" / "lua" / "llama_lsp" / "protocol.lua"
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"

# A JSON-RPC method name (`assistant/chat`, `$/progress`) and a command name (`llamaLsp.codeAction`).
METHOD = re.compile(r"\$?[A-Za-z]+(?:/[A-Za-z]+)+")
COMMAND = re.compile(r"llamaLsp\.[A-Za-z]+")
STANDARD_METHODS = frozenset(types.METHOD_TO_TYPES)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def without_fences(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)


def inline_code(markdown: str) -> list[str]:
    """The text of every `inline code` span outside fenced blocks (headings included); a span may run
    over a line break, as in Markdown, but not over a blank line."""
    spans = re.findall(r"`((?:[^`\n]|\n(?!\s*\n))+)`", without_fences(markdown))
    return [" ".join(span.split()) for span in spans]


def section(markdown: str, title: str) -> str:
    """The body of the `## ` section whose heading contains `title`, up to the next `## ` heading."""
    parts = re.split(r"^## ", markdown, flags=re.MULTILINE)
    found = [part for part in parts[1:] if title in part.splitlines()[0]]
    assert len(found) == 1, f"{rel(DOC)}: expected one '## ' heading with {title!r}, found {len(found)}"
    return found[0]


def custom_names(values: set[str]) -> set[str]:
    """The llama-lsp methods and commands among `values`: not LSP's own methods, not `llamaLsp.<setting>`."""
    settings_paths = {f"{settings.SECTION}.{key}" for key in settings._WIRE_NAMES}
    return {
        v
        for v in values
        if (METHOD.fullmatch(v) and v not in STANDARD_METHODS and not v.startswith("$/"))
        or (COMMAND.fullmatch(v) and v not in settings_paths)
    }


def documented_names() -> set[str]:
    return custom_names(set(inline_code(doc_text())))


def python_constants() -> dict[str, str]:
    return {name: v for name, v in vars(protocol).items() if name.isupper() and isinstance(v, str)}


def ts_constants() -> dict[str, str]:
    text = TS_PROTOCOL.read_text(encoding="utf-8")
    return dict(re.findall(r"^export const (\w+)\s*=\s*'([^'\n]*)'\s*;", text, flags=re.MULTILINE))


def lua_constants() -> dict[str, str]:
    text = LUA_PROTOCOL.read_text(encoding="utf-8")
    return dict(re.findall(r"^\s*([A-Z_][A-Z0-9_]*)\s*=\s*\"([^\"\n]*)\"", text, flags=re.MULTILINE))


DECLARATIONS = {
    rel(PY_PROTOCOL): python_constants,
    rel(TS_PROTOCOL): ts_constants,
    rel(LUA_PROTOCOL): lua_constants,
}


def declared_names(constants: dict[str, str]) -> dict[str, str]:
    """The constants whose value is a custom method or command name."""
    names = custom_names(set(constants.values()))
    return {name: value for name, value in constants.items() if value in names}


# --- methods and commands -------------------------------------------------------------------------


def test_the_doc_names_the_protocol() -> None:
    """The parser finds what it should: a guard against a doc reshaped so that the checks below pass
    on nothing."""
    names = documented_names()
    for expected in (protocol.CHAT, protocol.STATS, protocol.STATUS, protocol.COMMAND_CODE_ACTION):
        assert expected in names, f"{rel(DOC)} no longer names `{expected}` in backticks"
    assert not names & STANDARD_METHODS


@pytest.mark.parametrize("where", list(DECLARATIONS))
def test_every_documented_name_is_declared(where: str) -> None:
    declared = set(declared_names(DECLARATIONS[where]()).values())
    missing = sorted(documented_names() - declared)
    assert not missing, f"documented in {rel(DOC)} but not declared in {where}: {missing}"


@pytest.mark.parametrize("where", list(DECLARATIONS))
def test_every_declared_name_is_documented(where: str) -> None:
    declared = declared_names(DECLARATIONS[where]())
    documented = documented_names()
    missing = sorted(f"{name} = {value!r}" for name, value in declared.items() if value not in documented)
    assert not missing, f"declared in {where} but not documented in {rel(DOC)}: {missing}"


def test_the_three_declarations_agree_name_for_name() -> None:
    """The same constant name carries the same value in Python, TypeScript and Lua."""
    python = declared_names(python_constants())
    for where, read in list(DECLARATIONS.items())[1:]:
        other = declared_names(read())
        differ = sorted(
            f"{name}: {python.get(name)!r} in {rel(PY_PROTOCOL)}, {other.get(name)!r} in {where}"
            for name in python.keys() | other.keys()
            if python.get(name) != other.get(name)
        )
        assert not differ, f"method/command constants differ: {differ}"


# --- settings -------------------------------------------------------------------------------------


def documented_settings() -> list[str]:
    body = section(doc_text(), "Start and configuration")
    return re.findall(r"^\|\s*`(\w+)`\s*\|", body, flags=re.MULTILINE)


def test_the_settings_table_is_the_servers_settings() -> None:
    documented = documented_settings()
    assert len(documented) == len(set(documented)), f"{rel(DOC)}: a setting is listed twice: {documented}"
    server = set(settings._WIRE_NAMES)
    missing = sorted(server - set(documented))
    assert not missing, f"settings._WIRE_NAMES keys missing from the settings table of {rel(DOC)}: {missing}"
    unknown = sorted(set(documented) - server)
    assert not unknown, f"settings in the table of {rel(DOC)} that settings._WIRE_NAMES lacks: {unknown}"


def contributed_settings() -> dict[str, dict[str, object]]:
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    properties: dict[str, dict[str, object]] = manifest["contributes"]["configuration"]["properties"]
    return properties


def test_every_server_setting_is_contributed_to_vscode() -> None:
    """Without a contribution VS Code flags the key as unknown in settings.json (and it still reaches the
    server: on_initialized reads the whole `llamaLsp` section through workspace/configuration)."""
    properties = contributed_settings()
    wanted = [f"{settings.SECTION}.{key}" for key in settings._WIRE_NAMES]
    missing = sorted(key for key in wanted if key not in properties)
    assert not missing, f"server settings not in contributes.configuration of {rel(PACKAGE_JSON)}: {missing}"


def test_the_contributed_settings_have_the_servers_types_defaults_and_bounds() -> None:
    properties = contributed_settings()
    defaults = settings.Settings()
    wrong: list[str] = []
    for key, name in settings._WIRE_NAMES.items():
        entry = properties.get(f"{settings.SECTION}.{key}")
        if entry is None:
            continue  # the test above names it
        default = getattr(defaults, name)
        if isinstance(default, Path):
            # The server's default depends on the machine ($XDG_CACHE_HOME): VS Code sends none (null
            # is skipped), since an empty string would be a bad path.
            expected = {"type": ["string", "null"], "default": None}
        elif name == "backend":
            expected = {"type": ["string", "object"], "default": "local"}  # None is "local" on the wire
        elif isinstance(default, bool):  # before the numbers: a bool is an int
            expected = {"type": "boolean", "default": default}
        elif isinstance(default, str):
            expected = {"type": "string", "default": default}
        elif name == "mcp_servers":  # {name: server} on the wire; none by default
            expected = {"type": "object", "default": {}}
        elif isinstance(default, tuple):  # globs: a JSON array of strings
            expected = {"type": "array", "default": list(default)}
        else:
            low, high = settings._LIMITS[name]
            kind = "integer" if isinstance(default, int) else "number"
            expected = {"type": kind, "default": default, "minimum": low, "maximum": high}
        actual = {field: entry.get(field) for field in expected}
        if actual != expected:
            wrong.append(f"{settings.SECTION}.{key}: {actual} in {rel(PACKAGE_JSON)}, server: {expected}")
        if not (entry.get("description") or entry.get("markdownDescription")):
            wrong.append(f"{settings.SECTION}.{key}: no description in {rel(PACKAGE_JSON)}")
    assert not wrong, "\n".join(wrong)


# --- stats ----------------------------------------------------------------------------------------


def server_stats_keys() -> list[str]:
    return list(protocol.stats_json(TurnStats()))


def json_object_keys(text: str, start: str) -> list[str]:
    """The top-level keys of the `{...}` that follows `start` in `text` (JSON-ish, `…` allowed)."""
    at = text.find(start)
    assert at >= 0, f"{rel(DOC)}: {start!r} not found"
    opening = text.index("{", at)
    depth = 0
    for end in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    body = text[opening + 1 : end]
    return re.findall(r'"(\w+)"\s*:', re.sub(r"\{[^{}]*\}", "", body))


def test_the_documented_chat_stats_are_the_servers() -> None:
    chat = section(doc_text(), f"`{protocol.CHAT}`")
    documented = json_object_keys(chat, '"stats":')
    assert sorted(documented) == sorted(server_stats_keys()), (
        f"`stats` in the {protocol.CHAT} result of {rel(DOC)}: {documented}; "
        f"protocol.stats_json produces {server_stats_keys()}"
    )


def test_the_documented_totals_are_the_servers() -> None:
    body = section(doc_text(), f"`{protocol.STATS}`")
    match = re.search(r"totals: \{([^}]*)\}", body)
    assert match, f"{rel(DOC)}: the {protocol.STATS} section does not list `totals: {{...}}`"
    documented = [key.strip() for key in match.group(1).split(",")]
    server = list(StatsBook().totals_json())
    assert sorted(documented) == sorted(server), (
        f"`totals` in the {protocol.STATS} section of {rel(DOC)}: {documented}; "
        f"turns.StatsBook.totals_json produces {server}"
    )
