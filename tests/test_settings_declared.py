"""Each setting is declared once (lsp_server/lsp/settings.py); what is generated from the declarations
(dev/generate/settings.py, `make generate`) is current, and what the editors write by hand around it agrees.

No model and no server: files are rendered and read as text.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from dev import generate
from dev.generate import settings as settings_generator
from lsp_server.lsp import settings

ROOT = Path(__file__).resolve().parent.parent
NUMBERS = [spec for spec in settings.SPECS if spec.bounds is not None]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def assert_current(path: Path, generated: str) -> None:
    """The file on disk is what the declarations generate (tests/test_protocol_generated.py uses it too)."""
    on_disk = path.read_text(encoding="utf-8") if path.exists() else ""
    if on_disk != generated:
        diff = difflib.unified_diff(
            on_disk.splitlines(), generated.splitlines(), "on disk", "declared", lineterm="", n=1
        )
        pytest.fail(
            f"{rel(path)} is stale: run `make generate`.\n" + "\n".join(list(diff)[:60]), pytrace=False
        )


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return generate.render_all()


@pytest.mark.parametrize("path", settings_generator.FILES, ids=rel)
def test_the_generated_file_is_current(path: Path, generated: dict[Path, str]) -> None:
    assert_current(path, generated[path])


@pytest.mark.parametrize("spec", settings.SPECS, ids=lambda spec: spec.wire)
def test_what_a_client_sends_as_the_default_is_the_servers_default(spec: settings.SettingSpec) -> None:
    """The editors send `spec.default` when the user set nothing: the server takes it without a warning
    as its own default (null is skipped)."""
    merged, warnings = settings.merge(settings.Settings(), {spec.wire: spec.default})
    assert warnings == []
    assert getattr(merged, spec.name) == getattr(settings.Settings(), spec.name)


@pytest.mark.parametrize("spec", NUMBERS, ids=lambda spec: spec.wire)
def test_a_number_is_taken_within_its_bounds_and_refused_past_them(spec: settings.SettingSpec) -> None:
    assert spec.bounds is not None
    low, high = spec.bounds
    for value in (low, high):
        assert settings.merge(settings.Settings(), {spec.wire: value})[1] == []
    for value in (low - 1, high + 1):
        _, warnings = settings.merge(settings.Settings(), {spec.wire: value})
        assert warnings == [f"llama-lsp setting {spec.wire}={value!r} ignored: expected {low} to {high}"]


def test_a_reference_to_no_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="#contextSise#"):
        settings_generator.markdown("slots of `#contextSise#` tokens")


def test_the_neovim_plugin_sends_the_settings_it_leaves_out_of_init_options() -> None:
    """The annotations and help leave out the settings that server_settings() takes from the `completion`
    options; it must set each of them."""
    text = settings_generator.LUA_CONFIG.read_text(encoding="utf-8")
    body = re.search(r"^function M\.server_settings\(\)\n(.*?)^end$", text, flags=re.MULTILINE | re.DOTALL)
    assert body, f"{rel(settings_generator.LUA_CONFIG)}: no `function M.server_settings()`"
    from_completion = re.findall(
        r"^\s*settings\.(\w+) = .*M\.options\.completion\.", body.group(1), re.MULTILINE
    )
    assert sorted(from_completion) == sorted(settings_generator.NVIM_FROM_COMPLETION_OPTIONS)


def declared_fields(text: str, pattern: str) -> dict[str, bool]:
    """name -> optional, for each member `pattern` finds (its groups: the name, then `?` or nothing)."""
    return {name: mark == "?" for name, mark in re.findall(pattern, text, flags=re.MULTILINE)}


def test_the_editors_remote_backend_types_have_the_declared_shape() -> None:
    """The generated types of a remote `backend` (serverSettings.ts, config.lua) have the schema's members."""
    schema = settings.BACKEND_SCHEMA
    declared = {name: name not in schema["required"] for name in schema["properties"]}
    ts = settings_generator.TS_SETTINGS.read_text(encoding="utf-8")
    interface = re.search(r"^export interface RemoteBackend \{\n(.*?)^\}", ts, flags=re.MULTILINE | re.DOTALL)
    assert interface, f"{rel(settings_generator.TS_SETTINGS)} declares no `export interface RemoteBackend`"
    assert declared_fields(interface.group(1), r"^  (\w+)(\??):") == declared
    lua = settings_generator.LUA_CONFIG.read_text(encoding="utf-8")
    cls = re.search(r"^---@class llama_lsp\.RemoteBackend\n((?:---.*\n)+)", lua, flags=re.MULTILINE)
    assert cls, "config.lua declares no `---@class llama_lsp.RemoteBackend` with fields"
    assert declared_fields(cls.group(1), r"^---@field (\w+)(\??) ") == declared
