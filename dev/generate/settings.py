"""Writes what the settings' declarations (lsp_server/lsp/settings.py) generate: VS Code's package.json
contribution and TypeScript types (serverSettings.ts), the Neovim plugin's annotations, help section and
trusted-only settings, and the settings tables of the docs.

Only the generated part of a file is rewritten: a whole file that says so, the text between `begin
settings`/`end settings` marker comments, package.json's server settings, and the help file's settings
section.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lsp_server.lsp.settings import BACKEND_SCHEMA, MCP_SERVER_SCHEMA, SECTION, SPECS, Kind, SettingSpec

from .common import (
    LUA,
    MARKDOWN,
    PACKAGE_JSON,
    PROTOCOL_DOC,
    ROOT,
    between_markers,
    json_text,
    plain,
    replace_json,
    table_cell,
    wrap,
)

TS_SETTINGS = ROOT / "editors" / "vscode" / "src" / "serverSettings.ts"
VSCODE_README = ROOT / "editors" / "vscode" / "README.md"
LUA_CONFIG = ROOT / "editors" / "nvim" / "lua" / "llama_lsp" / "config.lua"
LUA_TRUST = ROOT / "editors" / "nvim" / "lua" / "llama_lsp" / "trust.lua"
NVIM_HELP = ROOT / "editors" / "nvim" / "doc" / "llama_lsp.txt"
# What render() writes (parts of some: the rest of them is written by hand, or by the protocol's generator).
FILES = (PACKAGE_JSON, TS_SETTINGS, VSCODE_README, LUA_CONFIG, LUA_TRUST, NVIM_HELP, PROTOCOL_DOC)

GENERATOR = "lsp_server/lsp/settings.py, `make generate`"
# The extension's own settings, declared by hand in package.json: read by the extension (settings.ts)
# or by vscode-languageclient. Any other property of the section that is no server setting is dropped.
VSCODE_CLIENT_SETTINGS = (f"{SECTION}.serverCommand", f"{SECTION}.trace.server")
# The Neovim plugin sends these from its `completion` options (config.lua, server_settings), never from
# init_options, so its annotations and help leave them out.
NVIM_FROM_COMPLETION_OPTIONS = ("completion", "completionTimeBudgetMs")
# What the `backend` setting's object is, for the editors' types of it (its fields are BACKEND_SCHEMA's).
REMOTE_BACKEND_DOC = (
    "An OpenAI-compatible server (llama.cpp's llama-server, vLLM) that answers instead of the local model. "
    "The server reads the API key from the environment variable `apiKeyEnv` names: a key is never a "
    "setting, so that it stays out of the settings files."
)

# What one server of `mcpServers` is, for the editors' types of it (its fields are MCP_SERVER_SCHEMA's).
MCP_SERVER_DOC = (
    "An MCP server whose tools chat may call: a `command` the language server starts (stdio), or a `url` "
    "it reaches (streamable HTTP)."
)


class Types(NamedTuple):
    """A kind of setting's type in each place that declares one."""

    schema: str | list[str]  # package.json (JSON Schema)
    typescript: str
    lua: str
    docs: str


TYPES: dict[Kind, Types] = {
    "bool": Types("boolean", "boolean", "boolean", "boolean"),
    "int": Types("integer", "number", "integer", "integer"),
    "float": Types("number", "number", "number", "number"),
    "str": Types("string", "string", "string", "string"),
    "choice": Types("string", "string", "string", "string"),  # narrowed to its values (_choices)
    "path": Types(["string", "null"], "string | null", "string", "path"),
    "command": Types("string", "string", "string|false", "string"),  # false: none, in the Lua plugin
    "backend": Types(
        ["string", "object"], "Backend", '"local"|llama_lsp.RemoteBackend', '`"local"` or object'
    ),
    "globs": Types("array", "string[]", "string[]", "list of globs"),
    "servers": Types(
        "object", "Record<string, McpServer>", "table<string, llama_lsp.McpServer>", "object of servers"
    ),
}

_REFERENCE = re.compile(r"#(\w+)#")  # `#contextSize#` in a doc: another setting
_WIRE = {spec.wire for spec in SPECS}


def _references(text: str, render: Callable[[str], str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(1) not in _WIRE:
            raise ValueError(f"a doc refers to #{match.group(1)}#, which is no setting")
        return render(match.group(1))

    return _REFERENCE.sub(replace, text)


def markdown(text: str) -> str:
    """A declared doc for Markdown outside VS Code: a reference is the setting's name."""
    return _references(text, lambda wire: wire)


def notes(spec: SettingSpec, *, vscode: bool) -> list[str]:
    """What the flags say about a setting, as sentences."""
    said = []
    if spec.reloads_model:
        said.append("Changing it reloads the model.")
    if spec.local_only:
        said.append("Not used with a remote `#backend#`.")
    if vscode and spec.trusted_only and spec.untrusted is not None:
        said.append(
            f"In Restricted Mode (an untrusted workspace) the server gets `{json_text(spec.untrusted)}`."
        )
    elif vscode and spec.trusted_only:
        said.append("Not used in Restricted Mode (an untrusted workspace).")
    elif vscode and spec.restricted:
        said.append("Not taken from workspace settings in Restricted Mode (an untrusted workspace).")
    elif not vscode and spec.trusted_only:
        said.append(
            f"For a folder you have not trusted (|llama_lsp-trust|) the server gets "
            f"`{_lua_literal(nvim_untrusted(spec))}`."
        )
    return said


def _choices(spec: SettingSpec, quote: Callable[[str], str], separator: str) -> str | None:
    """A choice's values as one place writes a type; None for another kind."""
    return separator.join(map(quote, spec.choices)) if spec.choices else None


def _type_label(spec: SettingSpec) -> str:
    """The type as the docs' tables say it, with a number's bounds or a choice's values."""
    if spec.choices:
        return _choices(spec, lambda value: f"`{json_text(value)}`", " or ") or ""
    if spec.bounds is None:
        return TYPES[spec.kind].docs
    low, high = plain(spec.bounds)
    return f"{TYPES[spec.kind].docs}, {low} to {high}"


# --- VS Code ---------------------------------------------------------------------------------------


def vscode_property(spec: SettingSpec) -> dict[str, Any]:
    """The setting's entry in package.json's contributes.configuration.properties."""
    entry: dict[str, Any] = {"type": TYPES[spec.kind].schema, "default": spec.default}
    if spec.bounds is not None:
        entry["minimum"], entry["maximum"] = spec.bounds
    if spec.choices:
        entry["enum"] = list(spec.choices)
    if spec.kind == "path":
        entry["scope"] = "machine-overridable"  # a path on this machine, not the workspace's
    if spec.kind == "backend":
        entry.update(BACKEND_SCHEMA)
    if spec.kind == "globs":
        entry["items"] = {"type": "string"}
    if spec.kind == "servers":
        entry["additionalProperties"] = MCP_SERVER_SCHEMA
    summary, *details = spec.doc.split("\n\n", 1)
    doc = "\n\n".join([" ".join([summary, *notes(spec, vscode=True)]), *details])
    entry["markdownDescription"] = _references(doc, lambda wire: f"#{SECTION}.{wire}#")
    return plain(entry)


def package_json(text: str) -> str:
    """package.json with the server settings' properties and restricted configurations as declared; the
    client's own properties keep their place (those before the first server setting stay first)."""
    manifest = json.loads(text)
    server = {f"{SECTION}.{spec.wire}": vscode_property(spec) for spec in SPECS}
    properties: dict[str, Any] = {}
    for key, entry in manifest["contributes"]["configuration"]["properties"].items():
        if key in VSCODE_CLIENT_SETTINGS:
            properties[key] = entry
        elif not server.keys() & properties.keys():
            properties.update(server)
    properties.update(server)  # when there was none yet

    restricted = [f"{SECTION}.{spec.wire}" for spec in SPECS if spec.restricted]
    before = manifest["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    kept = [key for key in before if key in restricted or key in VSCODE_CLIENT_SETTINGS]
    restricted_configurations = kept + [key for key in restricted if key not in kept]

    configuration = text.index('"configuration"', text.index('"contributes"'))
    text = replace_json(text, "properties", properties, configuration)
    return replace_json(text, "restrictedConfigurations", restricted_configurations)


def _ts_literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json_text(value)


def _backend_fields(object_schema: dict[str, Any] = BACKEND_SCHEMA) -> list[tuple[str, bool, str, str]]:
    """An object setting's members, from its schema (the `backend`'s by default): name, optional, JSON
    type, doc."""
    fields = []
    for name, schema in object_schema["properties"].items():
        doc = schema["description"]
        if "default" in schema:
            doc += f" Default: {json_text(schema['default'])}."
        kind = schema.get("type") or "|".join(json_text(value) for value in schema["enum"])
        fields.append((name, name not in object_schema.get("required", ()), kind, doc))
    return fields


def _ts_member_type(kind: str) -> str:
    return {"array": "string[]", "object": "Record<string, string>"}.get(
        kind, kind.replace('"', "'").replace("|", " | ")
    )


def _lua_member_type(kind: str) -> str:
    return {"array": "string[]", "object": "table<string, string>"}.get(kind, kind)


def _ts_doc(text: str, indent: str) -> list[str]:
    lines = wrap(text, 107 - len(indent) - 3)
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}" for line in lines), f"{indent} */"]


def typescript() -> str:
    """serverSettings.ts: the settings' type, the values that mean their defaults, the trusted-only keys,
    and the type of a remote `backend`."""
    fields = []
    for spec in SPECS:
        doc = wrap(markdown(" ".join([spec.summary, *notes(spec, vscode=True)])), 104)
        if len(doc) == 1:
            fields.append(f"  /** {doc[0]} */")
        else:
            fields.extend(["  /**", *(f"   * {line}" for line in doc), "   */"])
        optional = "?" if spec.trusted_only and spec.untrusted is None else ""  # forTrust leaves it out
        kind = _choices(spec, _ts_literal, " | ") or TYPES[spec.kind].typescript
        fields.append(f"  {spec.wire}{optional}: {kind};")
    defaults = [f"  {spec.wire}: {_ts_literal(spec.default)}," for spec in SPECS]
    trusted_only = ", ".join(_ts_literal(spec.wire) for spec in SPECS if spec.trusted_only)
    untrusted = ", ".join(
        f"{spec.wire}: {_ts_literal(spec.untrusted)}" for spec in SPECS if spec.untrusted is not None
    )
    backend = []
    for member, absent, schema_type, member_doc in _backend_fields():
        backend.extend([*_ts_doc(member_doc, "  "), f"  {member}{'?' if absent else ''}: {schema_type};"])
    mcp_server = []
    for member, absent, schema_type, member_doc in _backend_fields(MCP_SERVER_SCHEMA):
        kind = _ts_member_type(schema_type)
        mcp_server.extend([*_ts_doc(member_doc, "  "), f"  {member}{'?' if absent else ''}: {kind};"])
    return f"""/**
 * The server's settings as a client sends them (initializationOptions, the `{SECTION}` section), the values
 * that mean the server's defaults, and the ones never sent from an untrusted workspace.
 * Generated from {GENERATOR}: edit the declarations there, not this file.
 */

/** The configuration section that holds the server's settings (workspace/configuration). */
export const SECTION = {_ts_literal(SECTION)};

{chr(10).join(_ts_doc(REMOTE_BACKEND_DOC, ""))}
export interface RemoteBackend {{
{chr(10).join(backend)}
}}

export type Backend = 'local' | RemoteBackend;

{chr(10).join(_ts_doc(MCP_SERVER_DOC, ""))}
export interface McpServer {{
{chr(10).join(mcp_server)}
}}

export interface ServerSettings {{
{chr(10).join(fields)}
}}

export const SERVER_DEFAULTS: Required<ServerSettings> = {{
{chr(10).join(defaults)}
}};

/** The settings that make the server run a command on the workspace's code (settings.ts, forTrust). */
export const TRUSTED_ONLY = [{trusted_only}] as const;

/** What an untrusted workspace sends instead, where leaving a setting out would mean a default that runs. */
export const UNTRUSTED_VALUES: Partial<ServerSettings> = {{ {untrusted} }};
"""


def vscode_readme_table(package_json_text: str) -> str:
    """The extension README's table: every setting it contributes (the server's and its own)."""
    properties = json.loads(package_json_text)["contributes"]["configuration"]["properties"]
    rows = ["| setting | type | default | |", "|---|---|---|---|"]
    for key, entry in properties.items():
        types = entry["type"] if isinstance(entry["type"], list) else [entry["type"]]
        kind = " or ".join(types)
        if "minimum" in entry:
            kind += f", {entry['minimum']} to {entry['maximum']}"
        if "enum" in entry:
            kind = " or ".join(f"`{json_text(value)}`" for value in entry["enum"])
        doc = (entry.get("markdownDescription") or entry["description"]).split("\n\n", 1)[0]
        doc = re.sub(rf"#({SECTION}\.[\w.]+)#", r"\1", doc)
        rows.append(f"| `{key}` | {kind} | `{json_text(entry['default'])}` | {table_cell(doc)} |")
    return "\n".join(rows)


# --- docs ------------------------------------------------------------------------------------------


def _names(wires: list[str], conjunction: str = "and") -> str:
    quoted = [f"`{wire}`" for wire in wires]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {conjunction} {quoted[-1]}"


def settings_table(first_column: str) -> str:
    """The docs' table of the server's settings, and what the flags say about them."""
    rows = [f"| {first_column} | type | default | |", "|---|---|---|---|"]
    for spec in SPECS:
        rows.append(
            f"| `{spec.wire}` | {_type_label(spec)} | `{json_text(spec.default)}` | "
            f"{table_cell(markdown(spec.summary))} |"
        )
    reloading = [spec.wire for spec in SPECS if spec.reloads_model]
    local = [spec.wire for spec in SPECS if spec.local_only]
    flags = (
        f"Changing {_names(reloading, 'or')} reloads the model. "
        f"With a remote `backend`, {_names(local)} do not apply."
    )
    return "\n".join(rows) + "\n\n" + "\n".join(wrap(flags, 110))


# --- Neovim ----------------------------------------------------------------------------------------


def _lua_literal(value: Any) -> str:
    return json_text(value) if not isinstance(value, bool) else str(value).lower()


def _nvim_specs() -> list[SettingSpec]:
    return [spec for spec in SPECS if spec.wire not in NVIM_FROM_COMPLETION_OPTIONS]


def nvim_untrusted(spec: SettingSpec) -> Any:
    """What the Neovim plugin sends for a trusted-only setting from a folder the user has not trusted: VS
    Code's value for an untrusted workspace, else the default, which runs nothing (settings.setting). Sent
    rather than left out, because a running server keeps a value that a new configuration leaves out, and
    in Neovim trust can be taken back while the server runs."""
    return spec.default if spec.untrusted is None else spec.untrusted


def lua_untrusted() -> str:
    """trust.lua's table: the trusted-only settings, each with the value sent for an untrusted folder."""
    trusted_only = [spec for spec in SPECS if spec.trusted_only]
    entries = [f"  {spec.wire} = {_lua_literal(nvim_untrusted(spec))}," for spec in trusted_only]
    return "\n".join(
        [
            "---The settings that make the server run the folder's code (declared `trusted_only`), and the",
            "---value each has for a folder the user has not trusted.",
            "M.UNTRUSTED = {",
            *entries,
            "}",
        ]
    )


def lua_annotations() -> str:
    """config.lua's `llama_lsp.ServerSettings` and `llama_lsp.RemoteBackend` classes."""
    heads = [
        f"---@field {spec.wire}? {_choices(spec, json_text, '|') or TYPES[spec.kind].lua}"
        for spec in _nvim_specs()
    ]
    column = max(len(head) for head in heads if len(head) <= 40) + 1
    lines = [
        "---Server settings, camelCase as on the wire (the `llamaLsp` section; the server's defaults fill "
        "the rest).",
        "---@class llama_lsp.ServerSettings",
    ]
    for head, spec in zip(heads, _nvim_specs(), strict=True):
        doc = markdown(spec.summary)
        if spec.default is not None:
            doc += f" Default: {_lua_literal(spec.default)}."
        first = head.ljust(column) if len(head) < column else head + " "
        lines.extend(wrap(doc, 110, initial_indent=first, subsequent_indent="---".ljust(column)))
    lines.extend(["", *(f"---{line}" for line in wrap(REMOTE_BACKEND_DOC, 107))])
    lines.append("---@class llama_lsp.RemoteBackend")
    backend = [
        (f"---@field {name}{'?' if optional else ''} {kind}", doc)
        for name, optional, kind, doc in _backend_fields()
    ]
    column = max(len(head) for head, _ in backend) + 1
    for head, doc in backend:
        lines.extend(wrap(doc, 110, initial_indent=head.ljust(column), subsequent_indent="---".ljust(column)))
    lines.extend(["", *(f"---{line}" for line in wrap(MCP_SERVER_DOC, 107))])
    lines.append("---@class llama_lsp.McpServer")
    server = [
        (f"---@field {name}{'?' if optional else ''} {_lua_member_type(kind)}", doc)
        for name, optional, kind, doc in _backend_fields(MCP_SERVER_SCHEMA)
    ]
    column = max(len(head) for head, _ in server) + 1
    for head, doc in server:
        lines.extend(wrap(doc, 110, initial_indent=head.ljust(column), subsequent_indent="---".ljust(column)))
    return "\n".join(lines)


def help_section() -> str:
    """The body of the help file's SERVER SETTINGS section, after its heading line."""
    intro = (
        "The keys of `init_options` (|llama_lsp.setup()|), as the server takes them: the server's "
        "default applies to a key left out. "
        f"{_names(list(NVIM_FROM_COMPLETION_OPTIONS))} are set through the `completion` options instead "
        "(|llama_lsp-completion|)."
    )
    lines = ["", *wrap(intro, 78)]
    for spec in _nvim_specs():
        kind = '"local" or table' if spec.kind == "backend" else _type_label(spec)
        default = "" if spec.default is None else f", default {_lua_literal(spec.default)}"
        lines.extend(["", f"`{spec.wire}` ({kind}{default})"])
        doc = " ".join([markdown(spec.summary), *map(markdown, notes(spec, vscode=False))])
        lines.extend(wrap(doc, 78, initial_indent="    ", subsequent_indent="    "))
    return "\n".join([*lines, "", ""])


# --- the files -------------------------------------------------------------------------------------


HELP_HEADING = re.compile(r"^\d+\. SERVER SETTINGS +\*llama_lsp-settings\*\n", flags=re.MULTILINE)


def help_file(text: str) -> str:
    """The help file with its SERVER SETTINGS section (up to the next rule) generated."""
    heading = HELP_HEADING.search(text)
    if heading is None:
        raise ValueError(f"{NVIM_HELP}: no '<n>. SERVER SETTINGS *llama_lsp-settings*' heading")
    rule = re.compile(r"^=+$", flags=re.MULTILINE).search(text, heading.end())
    end = rule.start() if rule else len(text)
    return text[: heading.end()] + help_section() + text[end:]


def render(read: Callable[[Path], str]) -> dict[Path, str]:
    """Every file the settings generate, as the declarations make it now; `read` gives a file's text as
    it stands (on disk, or as a generator before this one left it)."""

    def marked(path: Path, body: str, comment: tuple[str, str]) -> str:
        return between_markers(read(path), body, comment, path, block="settings", source=GENERATOR)

    manifest = package_json(read(PACKAGE_JSON))
    return {
        PACKAGE_JSON: manifest,
        TS_SETTINGS: typescript(),
        VSCODE_README: marked(VSCODE_README, vscode_readme_table(manifest), MARKDOWN),
        LUA_CONFIG: marked(LUA_CONFIG, lua_annotations(), LUA),
        LUA_TRUST: marked(LUA_TRUST, lua_untrusted(), LUA),
        NVIM_HELP: help_file(read(NVIM_HELP)),
        PROTOCOL_DOC: marked(PROTOCOL_DOC, settings_table("key"), MARKDOWN),
    }
