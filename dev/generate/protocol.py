"""Writes what the protocol's declaration (lsp_server/lsp/protocol_shapes.py, with protocol.py's names and
the code action table) generates: the extension's protocol module (names, error codes, interfaces, typed
requests and the action commands), package.json's action commands and their menu entries, the Neovim
plugin's protocol module (names, error codes, action list, LuaCATS classes), and docs/protocol.md's
tables of messages, error codes, actions and payloads.

A constant's name follows from its wire name (`assistant/searchCodebase`: SEARCH_CODEBASE;
`llamaLsp.codeAction`: COMMAND_CODE_ACTION), and must be protocol.py's name for it, which is checked here;
an action's VS Code command from its title ("Write tests": `llamaLsp.writeTests`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_server.lsp import protocol
from lsp_server.lsp.protocol_shapes import (
    CLIENT_ACTIONS,
    ERROR_CODES,
    MESSAGES,
    SHAPES,
    ActionKind,
    Alias,
    ClientAction,
    Field,
    Interface,
    ListOf,
    MapOf,
    Message,
    Scalar,
    StringLiteral,
    Type,
    Union,
)
from lsp_server.lsp.settings import SECTION

from .common import (
    MARKDOWN,
    PACKAGE_JSON,
    PROTOCOL_DOC,
    ROOT,
    between_markers,
    merge_owned,
    one_line_entries,
    replace_json,
    table_cell,
    value_span,
    wrap,
)

TS_PROTOCOL = ROOT / "editors" / "vscode" / "src" / "protocol.ts"
LUA_PROTOCOL = ROOT / "editors" / "nvim" / "lua" / "llama_lsp" / "protocol.lua"
# What render() writes: the two protocol modules whole, parts of the others.
FILES = (TS_PROTOCOL, LUA_PROTOCOL, PACKAGE_JSON, PROTOCOL_DOC)

SOURCE = "lsp_server/lsp/protocol_shapes.py, `make generate`"
ACTIONS_SOURCE = "lsp_server/assistant/actions, `make generate`"
# The name `vim.lsp` knows the Neovim plugin's clients by: the plugin's own, in its protocol module so that
# every module that looks a client up reads it from one place.
NVIM_CLIENT_NAME = "llama_lsp"
# The VS Code editor context menu's submenu, and the groups of its action entries.
VSCODE_MENU = f"{SECTION}.editor"
ANSWER_GROUP, EDIT_GROUP = "1_ask", "2_edit"


# --- names -----------------------------------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def constant(message: Message) -> str:
    """The constant that holds the message's name, in every language."""
    if message.kind in ("command", "client command"):
        return "COMMAND_" + _snake(message.name.split(".", 1)[1])
    return _snake(message.name.split("/", 1)[1])


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def action_command(action: ClientAction) -> str:
    """The VS Code command that runs the action: `llamaLsp.` and its title in camelCase."""
    first, *rest = action.title.split()
    return f"{SECTION}." + first.lower() + "".join(word.capitalize() for word in rest)


def action_title(action: ClientAction) -> str:
    return f"Llama: {action.title}"


def check_names() -> None:
    """protocol.py's constants are the messages': each message's constant holds its name, and each custom
    name protocol.py holds is a message's."""
    values = {
        name: value for name, value in vars(protocol).items() if name.isupper() and isinstance(value, str)
    }
    declared = {constant(message): message.name for message in MESSAGES}
    wrong = [
        f"{name} = {values.get(name)!r}, want {value!r}"
        for name, value in declared.items()
        if values.get(name) != value
    ]
    names = set(declared.values())
    custom = re.compile(r"assistant/\w+|" + re.escape(SECTION) + r"\.\w+")
    wrong += [
        f"{name} = {value!r} is no message of protocol_shapes.MESSAGES"
        for name, value in values.items()
        if custom.fullmatch(value) and value not in names
    ]
    if wrong:
        raise ValueError(
            "lsp_server/lsp/protocol.py and protocol_shapes.MESSAGES differ: " + "; ".join(wrong)
        )


# --- TypeScript ------------------------------------------------------------------------------------

TS_SCALARS = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
    "unknown": "unknown",
    "never": "never",
}


def _ts_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ts_type(type_: Type, indent: str = "") -> str:
    if isinstance(type_, Scalar):
        return TS_SCALARS[type_.name]
    if isinstance(type_, StringLiteral):
        return _ts_string(type_.value)
    if isinstance(type_, Interface | Alias):
        return type_.name
    if isinstance(type_, ListOf):
        item = ts_type(type_.item, indent)
        return f"({item})[]" if isinstance(type_.item, Union) else f"{item}[]"
    if isinstance(type_, MapOf):
        return f"Record<string, {ts_type(type_.value, indent)}>"
    if isinstance(type_, Union):
        return " | ".join(ts_type(option, indent) for option in type_.options)
    one_line = "{ " + "; ".join(_ts_member(f, indent) for f in type_.fields) + " }"
    if len(one_line) <= 80 and not any(f.doc for f in type_.fields):
        return one_line
    inner = indent + "  "
    return "{\n" + "".join(_ts_field(f, inner) for f in type_.fields) + indent + "}"


def _ts_member(field: Field, indent: str) -> str:
    return f"{field.name}{'?' if field.optional else ''}: {ts_type(field.type, indent)}"


TS_WIDTH = 110  # the longest line written, but for a declaration that cannot be broken


def ts_doc(text: str, indent: str) -> str:
    if not text:
        return ""
    if len(indent) + len(text) + 7 <= TS_WIDTH:
        return f"{indent}/** {text} */\n"
    lines = wrap(text, TS_WIDTH - len(indent) - 3)
    return f"{indent}/**\n" + "".join(f"{indent} * {line}\n" for line in lines) + f"{indent} */\n"


def _ts_field(field: Field, indent: str) -> str:
    return ts_doc(field.doc, indent) + f"{indent}{_ts_member(field, indent)};\n"


def ts_shape(shape: Interface | Alias) -> str:
    if isinstance(shape, Alias):
        return ts_doc(shape.doc, "") + f"export type {shape.name} = {ts_type(shape.type)};\n"
    extends = f" extends {shape.extends.name}" if shape.extends else ""
    body = "".join(_ts_field(field, "  ") for field in shape.fields)
    return ts_doc(shape.doc, "") + f"export interface {shape.name}{extends} {{\n{body}}}\n"


def _ts_typed(message: Message) -> list[str]:
    """The vscode-jsonrpc objects that type a message for a connection's sendRequest and onNotification."""
    if message.kind not in ("request", "notification"):
        return []
    name = _camel(message.name.split("/", 1)[1])
    params = ts_type(message.params) if message.params is not None else "void"
    lines = []
    if message.kind == "request":
        result = ts_type(message.result) if message.result is not None else "null"
        lines.append(
            _ts_call(
                f"export const {name}Request = new RequestType<{params}, {result}, void>", constant(message)
            )
        )
    elif message.kind == "notification":
        lines.append(
            _ts_call(f"export const {name}Notification = new NotificationType<{params}>", constant(message))
        )
    if message.partial is not None:
        partial = message.partial.name
        lines.append(f"export const {_camel(partial)}Progress = new ProgressType<{partial}>();")
    return lines


def _ts_call(head: str, argument: str) -> str:
    one_line = f"{head}({argument});"
    return one_line if len(one_line) <= TS_WIDTH else f"{head}(\n  {argument},\n);"


def _ts_object(members: list[str], indent: str) -> str:
    one_line = "{ " + ", ".join(members) + " }"
    if len(indent) + len(one_line) <= TS_WIDTH - 30:
        return one_line
    return "{\n" + "".join(f"{indent}  {member},\n" for member in members) + indent + "}"


def typescript() -> str:
    """protocol.ts, whole."""
    check_names()
    constants = "".join(
        ts_doc(message.doc, "") + f"export const {constant(message)} = {_ts_string(message.name)};\n"
        for message in MESSAGES
    )
    error_codes = "".join(ts_doc(code.doc, "  ") + f"  {code.name}: {code.code},\n" for code in ERROR_CODES)
    shapes = "\n".join(ts_shape(shape) for shape in SHAPES)
    actions = "".join(
        f"  {_ts_string(action_command(action))}: "
        + _ts_object(
            [
                f"kind: {_ts_string(action.kind)}",
                f"title: {_ts_string(action.title)}",
                f"lspKind: {_ts_string(action.lsp_kind)}",
                f"answers: {str(action.answers).lower()}",
                f"forDiagnostics: {str(action.for_diagnostics).lower()}",
            ],
            "  ",
        )
        + ",\n"
        for action in CLIENT_ACTIONS
    )
    typed = "\n".join(line for message in MESSAGES for line in _ts_typed(message))
    header = ts_doc(
        "llama-lsp's own LSP methods, commands and payloads, and the code action kinds as commands, for "
        "the extension and its tests (docs/protocol.md documents them). LSP's own types are declared as the "
        "plain JSON shapes the server uses, so that this module needs neither `vscode` nor the language "
        "client and the protocol test can import it in plain node. "
        f"Generated from {SOURCE}: edit the declarations there, not this file.",
        "",
    )
    return f"""{header}
import {{ NotificationType, ProgressType, RequestType }} from 'vscode-jsonrpc';

export {{
  SECTION,
  type Backend,
  type RemoteBackend,
  type ServerSettings as InitializationOptions,
}} from './serverSettings';

{constants}
/** The LSP error codes the server answers with, and when. */
export const ErrorCode = {{
{error_codes}}} as const;

{shapes}
/** One of the server's code action kinds (lsp_server/assistant/actions), as a command of the extension. */
export interface ActionCommand {{
  kind: ActionKind;
  /** Offered as "Llama: <title>". */
  title: string;
  /** Its LSP CodeActionKind. */
  lspKind: string;
  /** The server answers in words, shown in the chat, instead of with an edit. */
  answers: boolean;
  /** About the diagnostics in range, which go with the request. */
  forDiagnostics: boolean;
}}

/** Command id → the server's action kind; package.json contributes each command. */
export const ACTION_COMMANDS: Readonly<Record<string, ActionCommand>> = {{
{actions}}};

{typed}
"""


# --- package.json ----------------------------------------------------------------------------------


def _group(entry: dict[str, Any]) -> tuple[str, int]:
    group, _, order = str(entry.get("group", "")).partition("@")
    return group, int(order) if order.isdigit() else 0


def package_json(text: str) -> str:
    """package.json with a command and an entry of the editor's Llama menu for each action; the other
    commands and entries keep their place (the actions' go where the first of them was)."""
    manifest = json.loads(text)
    contributes = manifest["contributes"]
    ids = {action_command(action) for action in CLIENT_ACTIONS}

    def owned(entry: dict[str, Any]) -> bool:
        return entry.get("command") in ids

    commands = [{"command": action_command(a), "title": action_title(a)} for a in CLIENT_ACTIONS]
    commands = merge_owned(contributes["commands"], owned, commands)

    menu = contributes["menus"][VSCODE_MENU]
    last: dict[str, int] = {}  # the hand-written entries' last place in each group: the actions' follow it
    for entry in menu:
        if not owned(entry):
            group, order = _group(entry)
            last[group] = max(last.get(group, 0), order)
    entries = []
    for action in CLIENT_ACTIONS:
        group = ANSWER_GROUP if action.answers else EDIT_GROUP
        last[group] = last.get(group, 0) + 1
        entries.append({"command": action_command(action), "group": f"{group}@{last[group]}"})
    menu = merge_owned(menu, owned, entries)

    contributes_at = text.index('"contributes"')
    text = replace_json(text, "commands", commands, contributes_at, one_line_entries)
    menus_at, _ = value_span(text, "menus", contributes_at)
    menu_at = text.index(f'"{VSCODE_MENU}":', menus_at)
    return replace_json(text, VSCODE_MENU, menu, menu_at, one_line_entries)


# --- Lua -------------------------------------------------------------------------------------------

LUA_SCALARS = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "null": "nil",
    "unknown": "any",
    "never": "nil",
}


def _lua_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def lua_name(shape: Interface | Alias) -> str:
    return f"lsp.{shape.name}" if isinstance(shape, Interface) and shape.lsp else f"llama_lsp.{shape.name}"


class _LuaClasses:
    """LuaCATS annotations of the shapes; an inline object too long for one line becomes a class of its
    own, named after the field that holds it (`llama_lsp.StatsResultTotals`)."""

    def __init__(self) -> None:
        self.extra: list[str] = []

    def type(self, type_: Type, owner: str = "") -> str:
        if isinstance(type_, Scalar):
            return LUA_SCALARS[type_.name]
        if isinstance(type_, StringLiteral):
            return _lua_string(type_.value)
        if isinstance(type_, Interface | Alias):
            return lua_name(type_)
        if isinstance(type_, ListOf):
            item = self.type(type_.item, owner)
            return f"({item})[]" if isinstance(type_.item, Union) else f"{item}[]"
        if isinstance(type_, MapOf):
            return f"table<string, {self.type(type_.value, owner)}>"
        if isinstance(type_, Union):
            return "|".join(self.type(option, owner) for option in type_.options)
        members = ", ".join(
            f"{f.name}{'?' if f.optional else ''}: {self.type(f.type, owner)}" for f in type_.fields
        )
        if len(members) <= 60 and not any(f.doc for f in type_.fields):
            return "{ " + members + " }"
        name = f"llama_lsp.{owner}"
        self.extra.append(self.cls(name, "", type_.fields))
        return name

    def cls(self, name: str, doc: str, fields: tuple[Field, ...], parent: str = "") -> str:
        lines = [f"---{line}" for line in wrap(doc, 107)]
        lines.append(f"---@class {name}{' : ' + parent if parent else ''}")
        owner = name.removeprefix("llama_lsp.")
        heads = []
        for f in fields:
            type_ = self.type(f.type, owner + f.name[:1].upper() + f.name[1:])
            heads.append((f"---@field {f.name}{'?' if f.optional else ''} {type_}", f.doc))
        fitting = [len(head) for head, _ in heads if len(head) <= 44]
        column = max(fitting, default=36) + 1
        for head, text in heads:
            if not text:
                lines.append(head)
                continue
            first = head.ljust(column) if len(head) < column else head + " "
            lines.extend(wrap(text, 110, initial_indent=first, subsequent_indent="---".ljust(column)))
        return "\n".join(lines)

    def shape(self, shape: Interface | Alias) -> str:
        if isinstance(shape, Alias):
            doc = "".join(f"---{line}\n" for line in wrap(shape.doc, 107))
            return doc + f"---@alias {lua_name(shape)} {self.type(shape.type)}"
        parent = lua_name(shape.extends) if shape.extends else ""
        return self.cls(lua_name(shape), shape.doc, shape.fields, parent)


def _lua_comment(text: str, indent: str) -> list[str]:
    return [f"{indent}---{line}" for line in wrap(text, 107 - len(indent))]


def lua() -> str:
    """protocol.lua, whole."""
    check_names()
    classes = _LuaClasses()
    shapes = [classes.shape(shape) for shape in SHAPES if not (isinstance(shape, Interface) and shape.lsp)]
    action_class = classes.cls(
        "llama_lsp.Action",
        "One of the server's code action kinds (lsp_server/assistant/actions).",
        (
            Field("kind", ActionKind),
            Field("title", Scalar("string"), 'Offered as "Llama: <title>".'),
            Field("lsp_kind", Scalar("string"), "Its LSP CodeActionKind."),
            Field("answers", Scalar("boolean"), "The server answers in words instead of with an edit."),
            Field(
                "for_diagnostics",
                Scalar("boolean"),
                "About the diagnostics in range, which go with the request.",
            ),
        ),
    )
    members = [
        *_lua_comment("The name `vim.lsp` knows the plugin's clients by.", "  "),
        f"  CLIENT_NAME = {_lua_string(NVIM_CLIENT_NAME)},",
    ]
    for message in MESSAGES:
        members += [*_lua_comment(message.doc, "  "), f"  {constant(message)} = {_lua_string(message.name)},"]
    members.append("  -- The LSP error codes the server answers with")
    for code in ERROR_CODES:
        members += [*_lua_comment(code.doc, "  "), f"  {_snake(code.name)} = {code.code},"]
    members += ["  ---@type llama_lsp.Action[]", "  ACTIONS = {"]
    for action in CLIENT_ACTIONS:
        members += [
            "    {",
            f"      kind = {_lua_string(action.kind)},",
            f"      title = {_lua_string(action.title)},",
            f"      lsp_kind = {_lua_string(action.lsp_kind)},",
            f"      answers = {str(action.answers).lower()},",
            f"      for_diagnostics = {str(action.for_diagnostics).lower()},",
            "    },",
        ]
    members.append("  },")
    header = _lua_comment(
        "llama-lsp's own LSP methods, commands and payloads, and the code action kinds, for the Neovim "
        "plugin (docs/protocol.md documents them). LSP's own types are Neovim's (`lsp.Range`, ...). "
        f"Generated from {SOURCE}: edit the declarations there, not this file.",
        "",
    )
    blocks = [*shapes, *classes.extra, action_class]
    return "\n".join([*header, "", "\n\n".join(blocks), "", "return {", *members, "}", ""])


# --- docs ------------------------------------------------------------------------------------------

DOC_SCALARS = {**TS_SCALARS, "integer": "integer"}


def doc_type(type_: Type) -> str:
    """A type as the docs write it: TypeScript's notation, with integers told from other numbers."""
    if isinstance(type_, Scalar):
        return DOC_SCALARS[type_.name]
    if isinstance(type_, StringLiteral):
        return json.dumps(type_.value)
    if isinstance(type_, Interface | Alias):
        return type_.name
    if isinstance(type_, ListOf):
        item = doc_type(type_.item)
        return f"({item})[]" if isinstance(type_.item, Union) else f"{item}[]"
    if isinstance(type_, MapOf):
        return f"Record<string, {doc_type(type_.value)}>"
    if isinstance(type_, Union):
        return " | ".join(doc_type(option) for option in type_.options)
    return (
        "{"
        + ", ".join(f"{f.name}{'?' if f.optional else ''}: {doc_type(f.type)}" for f in type_.fields)
        + "}"
    )


def _code(text: str) -> str:
    return f"`{text}`"


KIND_LABELS = {
    "request": "request",
    "notification": "notification",
    "command": "command (`workspace/executeCommand`)",
    "client command": "command the client runs",
}


def messages_table() -> str:
    rows = ["| name | kind | params | result | |", "|---|---|---|---|---|"]
    for message in MESSAGES:
        kind = KIND_LABELS[message.kind] + (", server to client" if message.from_server else "")
        params = doc_type(message.params) if message.params is not None else ""
        if message.kind in ("command", "client command") and params:
            params = f"[{params}]"
        result = _code(doc_type(message.result)) if message.result is not None else ""
        if message.partial is not None:
            result += f"; partial results: {_code(message.partial.name)}"
        rows.append(
            f"| {_code(message.name)} | {kind} | {table_cell(_code(params)) if params else ''} | "
            f"{table_cell(result)} | {table_cell(message.doc)} |"
        )
    return "\n".join(rows)


def errors_table() -> str:
    rows = ["| code | when |", "|---|---|"]
    rows += [f"| {code.code} {code.name} | {table_cell(code.doc)} |" for code in ERROR_CODES]
    return "\n".join(rows)


def actions_table() -> str:
    rows = ["| `kind` | title | LSP kind | answers with | |", "|---|---|---|---|---|"]
    for action in CLIENT_ACTIONS:
        answer = "words (`llamaLsp.showAnswer`)" if action.answers else "an edit"
        offered = "only with diagnostics in range, about them" if action.for_diagnostics else ""
        rows.append(
            f'| `{action.kind}` | "{action_title(action)}" | `{action.lsp_kind}` | {answer} | {offered} |'
        )
    return "\n".join(rows)


def payloads_section() -> str:
    lsp = [shape.name for shape in SHAPES if isinstance(shape, Interface) and shape.lsp]
    intro = (
        f"{', '.join(map(_code, lsp))} are LSP's own types (the server uses the members that "
        "`editors/vscode/src/protocol.ts` declares). A member marked `?` may be absent; `null` is a value."
    )
    parts = ["\n".join(wrap(intro, 110))]
    for shape in SHAPES:
        if isinstance(shape, Interface) and shape.lsp:
            continue
        block = [f"### `{shape.name}`", ""]
        if shape.doc:
            block += [*wrap(shape.doc, 110), ""]
        if isinstance(shape, Alias):
            block.append(_code(doc_type(shape.type)))
        else:
            if shape.extends is not None:
                block += [f"The members of `{shape.extends.name}`, and:", ""]
            block += ["| member | type | |", "|---|---|---|"]
            block += [
                f"| `{f.name}{'?' if f.optional else ''}` | {table_cell(_code(doc_type(f.type)))} | "
                f"{table_cell(f.doc)} |"
                for f in shape.fields
            ]
        parts.append("\n".join(block))
    return "\n\n".join(parts)


# --- the files -------------------------------------------------------------------------------------


def render(read: Callable[[Path], str]) -> dict[Path, str]:
    """Every file the protocol generates, as the declaration makes it now; `read` gives a file's text as
    it stands (on disk, or as a generator before this one left it)."""
    doc = read(PROTOCOL_DOC)
    for block, body, source in (
        ("protocol", messages_table(), SOURCE),
        ("actions", actions_table(), ACTIONS_SOURCE),
        ("errors", errors_table(), SOURCE),
        ("payloads", payloads_section(), SOURCE),
    ):
        doc = between_markers(doc, body, MARKDOWN, PROTOCOL_DOC, block=block, source=source)
    return {
        TS_PROTOCOL: typescript(),
        LUA_PROTOCOL: lua(),
        PACKAGE_JSON: package_json(read(PACKAGE_JSON)),
        PROTOCOL_DOC: doc,
    }
