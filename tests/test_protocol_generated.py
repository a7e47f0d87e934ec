"""The protocol is declared once (lsp_server/lsp/protocol.py's names, protocol_shapes.py's messages and
payloads, the action table); what is generated from it (dev/generate/protocol.py, `make generate`) is
current, the declared payloads are what the server sends, and no protocol name is written by hand in the
editors.

No model and no server: files are rendered and read as text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dev import generate
from dev.generate import protocol as protocol_generator
from dev.generate import settings as settings_generator
from lsp_server.assistant.checks.verifier import Verification
from lsp_server.assistant.conversation import TurnStats
from lsp_server.lsp import protocol, protocol_shapes
from lsp_server.lsp.protocol_shapes import Alias, Inline, Interface, ListOf, MapOf, Union
from lsp_server.lsp.turns import StatsBook

from .test_settings_declared import assert_current

ROOT = Path(__file__).resolve().parent.parent
VSCODE_SRC = ROOT / "editors" / "vscode" / "src"
NVIM_LUA = ROOT / "editors" / "nvim" / "lua"
GENERATED_MODULES = (
    protocol_generator.TS_PROTOCOL,
    protocol_generator.LUA_PROTOCOL,
    settings_generator.TS_SETTINGS,
)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return generate.render_all()


@pytest.mark.parametrize("path", protocol_generator.FILES, ids=rel)
def test_the_generated_file_is_current(path: Path, generated: dict[Path, str]) -> None:
    assert_current(path, generated[path])


def test_each_generator_says_which_files_it_writes(generated: dict[Path, str]) -> None:
    assert set(generated) == set(settings_generator.FILES) | set(protocol_generator.FILES)


# --- the declaration ------------------------------------------------------------------------------


def test_every_name_in_protocol_py_is_a_declared_message() -> None:
    protocol_generator.check_names()  # raises when they differ


def test_a_name_with_no_message_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "COMMAND_NEW_THING", "llamaLsp.newThing", raising=False)
    with pytest.raises(ValueError, match=r"llamaLsp\.newThing"):
        protocol_generator.check_names()


def test_every_type_a_payload_names_is_declared() -> None:
    declared = set(protocol_shapes.SHAPES)

    def named(type_: object) -> list[Interface | Alias]:
        if isinstance(type_, Interface | Alias):
            return [type_]
        if isinstance(type_, Union):
            return [n for option in type_.options for n in named(option)]
        if isinstance(type_, ListOf):
            return named(type_.item)
        if isinstance(type_, MapOf):
            return named(type_.value)
        if isinstance(type_, Inline):
            return [n for field in type_.fields for n in named(field.type)]
        return []

    shapes = [shape for shape in protocol_shapes.SHAPES if isinstance(shape, Interface)]
    used = [n for shape in shapes for field in shape.fields for n in named(field.type)]
    messages = protocol_shapes.MESSAGES
    used += [n for m in messages for type_ in (m.params, m.result, m.partial) for n in named(type_)]
    missing = sorted({n.name for n in used if n not in declared})
    assert not missing, f"named by a payload but not in protocol_shapes.SHAPES: {missing}"


def members(shape: Interface | Inline) -> list[str]:
    return [field.name for field in shape.fields]


def test_the_declared_turn_stats_are_what_the_server_sends() -> None:
    assert members(protocol_shapes.TurnStats) == list(protocol.stats_json(TurnStats()))


def test_the_declared_totals_are_what_the_server_sends() -> None:
    [totals] = [f.type for f in protocol_shapes.StatsResult.fields if f.name == "totals"]
    assert isinstance(totals, Inline)
    assert members(totals) == list(StatsBook().totals_json())


def test_the_declared_verification_is_what_the_server_sends() -> None:
    assert sorted(members(protocol_shapes.Verification)) == sorted(Verification(command=None).to_json())


def test_the_last_stats_everywhere_are_a_chat_results_stats() -> None:
    stats = {f.name: f.type for f in protocol_shapes.ChatResult.fields}["stats"]
    for shape in (protocol_shapes.StatusParams, protocol_shapes.StatsResult):
        last = {f.name: f.type for f in shape.fields}["lastStats"]
        assert last == stats or (isinstance(last, Union) and stats in last.options), shape.name


def test_the_action_kinds_are_the_action_tables() -> None:
    assert [action.kind for action in protocol_shapes.CLIENT_ACTIONS] == list(protocol.ACTION_KINDS)
    assert protocol_shapes.ActionKind.type == protocol_shapes.literals(*protocol.ACTION_KINDS)


# --- the editors ----------------------------------------------------------------------------------


def test_each_action_command_has_the_actions_title_exactly() -> None:
    """VS Code's command palette shows "Llama: " and the title the server offers the action under."""
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    contributed = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    wanted = {
        protocol_generator.action_command(a): f"Llama: {a.title}" for a in protocol_shapes.CLIENT_ACTIONS
    }
    assert {command: contributed.get(command) for command in wanted} == wanted


def protocol_literals() -> set[str]:
    """The names only the generated modules may write: each message's, and each action's VS Code command."""
    names = {message.name for message in protocol_shapes.MESSAGES}
    return names | {protocol_generator.action_command(a) for a in protocol_shapes.CLIENT_ACTIONS}


def hand_written(root: Path, suffix: str) -> list[Path]:
    return sorted(path for path in root.rglob(f"*{suffix}") if path not in GENERATED_MODULES)


@pytest.mark.parametrize("path", [*hand_written(VSCODE_SRC, ".ts"), *hand_written(NVIM_LUA, ".lua")], ids=rel)
def test_no_protocol_name_is_written_by_hand_in_the_editors(path: Path) -> None:
    """The editors' hand-written modules take every protocol name and code from the generated modules
    (a name inside a longer message, or in a comment, is no declaration)."""
    text = path.read_text(encoding="utf-8")
    quoted = set(re.findall(r"""(?<![\w\\])(['"])([^'"\n]+)\1""", text))
    found = sorted(value for _, value in quoted if value in protocol_literals())
    codes = sorted(
        str(code.code) for code in protocol_shapes.ERROR_CODES if re.search(rf"(?<![\w-]){code.code}\b", text)
    )
    assert not found and not codes, (
        f"{rel(path)} writes {found + codes}: take them from the generated protocol module"
    )


def local_imports(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return set(
        re.findall(
            r"""^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']*)'""", text, flags=re.MULTILINE | re.DOTALL
        )
    )


def test_the_generated_typescript_modules_import_one_way() -> None:
    """serverSettings.ts imports nothing of the extension and protocol.ts only serverSettings.ts, so neither
    is in an import cycle (protocol.ts once declared the backend's type that serverSettings.ts needs)."""
    assert local_imports(settings_generator.TS_SETTINGS) == set()
    assert local_imports(protocol_generator.TS_PROTOCOL) == {"./serverSettings"}
