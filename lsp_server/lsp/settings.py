"""The server's settings: each declared once, and read from initializationOptions and the `llamaLsp`
configuration section.

A setting is a field of `Settings` whose declaration (`setting(...)`) holds its default, bounds, doc text
and flags; its wire name is the field's name in camelCase. The editors' declarations (VS Code's
package.json contribution and TypeScript type, the Neovim plugin's annotations and help) and the docs'
settings tables are generated from these by dev/generate/settings.py (`make generate`), and
tests/test_settings_declared.py fails when one of them is stale.

A bad value falls back to its default with a warning the client sees, instead of failing the whole start.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..assistant.actions import REWRITE_MAX_FACTOR
from ..assistant.checks.sandbox import SandboxMode
from ..assistant.tools.mcp_config import MAX_LOCAL_TOOLS, MAX_REMOTE_TOOLS, McpServerConfig, parse_servers
from ..engine import RemoteConfig, models
from ..engine.api import SECONDS_PER_TOKEN

SECTION = "llamaLsp"

# A setting's kind follows from its field's type: it picks the conversion and each editor's type. A
# `Literal` of strings is a "choice" of those values.
Kind = Literal["bool", "int", "float", "str", "choice", "path", "command", "backend", "globs", "servers"]
ChatCodebase = Literal["mention", "always"]
McpToolChoice = Literal["relevant", "first"]


@dataclass(frozen=True)
class _Declared:
    doc: str
    bounds: tuple[float, float] | None
    reloads_model: bool
    local_only: bool
    trusted_only: bool
    restricted: bool
    untrusted: Any


def setting(
    default: Any = dataclasses.MISSING,
    *,
    factory: Any = dataclasses.MISSING,
    doc: str,
    bounds: tuple[float, float] | None = None,
    reloads_model: bool = False,
    local_only: bool = False,
    trusted_only: bool = False,
    restricted: bool = False,
    untrusted: Any = None,
) -> Any:
    """Declares a field of `Settings` as a setting.

    doc: Markdown; its first paragraph is the summary the tables and annotations show. `#name#` refers
      to another setting by its wire name (a link in VS Code).
    bounds: the lowest and highest value of a number, as the warning about a bad one prints them.
    reloads_model: changing it loads the local model again (`Settings.engine_fields`).
    local_only: it does nothing with a remote `backend`.
    trusted_only: it makes the server run a command on the workspace's code, so VS Code never sends it
      from an untrusted workspace (settings.ts, TRUSTED_ONLY), and the Neovim plugin sends `untrusted`,
      else the default, for a folder the user has not trusted (trust.lua, UNTRUSTED); implies restricted.
    untrusted: for a trusted_only setting whose default runs something, the value VS Code sends from an
      untrusted workspace instead of leaving the setting out (which would mean that default).
    restricted: VS Code's Restricted Mode ignores its workspace value (restrictedConfigurations).
    """
    declared = _Declared(
        doc, bounds, reloads_model, local_only, trusted_only, restricted or trusted_only, untrusted
    )
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata={"setting": declared})
    return dataclasses.field(default=default, metadata={"setting": declared})


@dataclass(frozen=True)
class Settings:
    model: str = setting(
        models.DEFAULT_MODEL,
        doc="Catalogue model name (`llama-lsp model list`) or the path of a GGUF file.",
        reloads_model=True,
        local_only=True,
    )
    context_size: int = setting(
        8192,
        doc="Context size in tokens for each conversation slot.",
        bounds=(256, 131072),
        reloads_model=True,
        local_only=True,
    )
    threads: int = setting(
        0,
        doc="Threads for decoding and for reading prompts; 0 picks a default for the machine (half the "
        "cores, at most 4).",
        bounds=(0, 256),
        reloads_model=True,
        local_only=True,
    )
    slots: int = setting(
        4,
        doc="Conversations kept warm at once, each in its own slot of `#contextSize#` tokens whose cached "
        "prompt a follow-up reuses; the least recently used is evicted.",
        bounds=(1, 32),
        reloads_model=True,
        local_only=True,
    )
    cache_dir: Path = setting(  # noqa: RUF009 (setting() returns a dataclasses.field)
        factory=models.cache_root,
        doc="Directory where the server saves its slots' state, so that the cache survives restarts. Unset: "
        "`~/.cache/llama-lsp` (under `$XDG_CACHE_HOME` when that is set); the models stay in "
        "`~/.cache/llama-lsp/models` either way.",
        reloads_model=True,
        local_only=True,
    )
    codebase_index: bool = setting(
        True,
        doc="Index the workspace's files in the background (functions, classes and blocks, ranked by "
        "their words), saved in `#cacheDir#`, so that chat's search finds the code a question "
        "describes even when no line matches its words, and `assistant/searchCodebase` answers. The "
        "files git would commit (`.gitignore` respected), or every file outside build and dependency "
        "folders where the folder is no repository; binary, minified and huge files are skipped. It "
        "pauses while the model answers. Off: nothing is indexed.",
    )
    codebase_exclude: tuple[str, ...] = setting(
        (),
        doc="Files the index leaves out besides those `.gitignore` ignores: globs over a file's path in "
        "its workspace folder (`*` and `?` within a name, `**` across folders; a pattern without `/` "
        'matches a name at any depth, as in `.gitignore`), such as `"fixtures"`, `"docs/*.md"` or '
        '`"*.min.js"`. A pattern that matches a folder leaves out everything in it.',
    )
    codebase_max_file_kb: int = setting(
        512,
        doc="Files larger than this many KB are not indexed (a data file or a generated module has "
        "little to find and costs memory).",
        bounds=(1, 51_200),
    )
    chat_codebase: ChatCodebase = setting(  # noqa: RUF009 (a Literal default is a plain string)
        "mention",
        doc='When chat reads the workspace code that best matches a question before answering: `"mention"`, '
        'when the question says `@codebase`; `"always"`, for every question (each then takes longer to '
        "read, on a CPU a few seconds).",
    )
    max_tool_steps: int = setting(
        6,
        doc="Tool calls (reading, searching, editing files) the model may make per answer, at most.",
        bounds=(1, 32),
    )
    max_tokens: int = setting(
        1024,
        doc="Tokens the model may write per model request, at most. A code action that writes a block "
        "again (Fix, Document, Refactor, Write tests) may write more, so that the whole block fits: up to "
        f"{REWRITE_MAX_FACTOR} times this; a block too long for that is refused with a message that names "
        "this setting.",
        bounds=(1, 32768),
    )
    temperature: float = setting(
        0.0,
        doc="Sampling temperature; 0 is greedy, so the same question gets the same answer.",
        bounds=(0.0, 2.0),
    )
    # Checking edits (lsp_server.assistant.checks): the project's own tests by default, in the check's
    # sandbox, and never from an untrusted workspace.
    verify_command: str | None = setting(
        "auto",
        doc='Shell command that checks each edit the model proposes; `"auto"` finds the project\'s tests. '
        "Empty: edits are not checked.\n\n"
        '`"auto"` (the default): for a Python file, the project\'s `test_*.py` and `*_test.py` files, run '
        "with pytest or unittest (as the project is set up) and the project's `.venv` or `venv` where it "
        "has one: the test files that import the edited module, or all of them when none does. The result "
        "says which command ran and why, or that no tests were found. Or a command of your own, e.g. "
        "`python -m pytest -q`, or `python -m pytest -q {file}` for a test file: `{file}` is replaced by "
        "the edited file's path relative to the folder, shell-quoted.\n\n"
        "**It runs code the model wrote**, and the workspace's own code (its tests, `conftest.py`): the "
        "server applies the proposed edit to a temporary copy of the folder and runs the command there, "
        "in a sandbox (`#verifySandbox#`) with a timeout. Exit status 0 passes; on a failure a code action "
        "writes a fresh candidate, and chat reads the output and tries again (`#maxVerifyAttempts#`). "
        "Write tests sets the expected values its tests got wrong to what the code gives (and lists them), "
        "keeps the tests that pass, and when none does, reads what failed and writes its tests again.",
        trusted_only=True,
        untrusted="",
    )
    test_diagnostics: bool = setting(
        False,
        doc="Run the project's tests after each save of a Python file, and show each failure as a problem "
        "on the failing test's line and on the function under test, with what failed; Fix there reads "
        "the failure.\n\n"
        'The tests are the ones `"auto"` of `#verifyCommand#` finds for the saved file (pytest or unittest, '
        "the test files that import it), run in the background in the same sandbox (`#verifySandbox#`) "
        "on a copy of the folder, at most `#verifyTimeout#` seconds; a failure stays shown until its test "
        "file runs again. **It runs the workspace's code**, so it is read only in a trusted workspace.",
        trusted_only=True,
    )
    verify_sandbox: SandboxMode = setting(  # noqa: RUF009 (as above)
        "auto",
        doc='How `#verifyCommand#` is isolated: `"auto"` runs it under bubblewrap (`bwrap`), or not at all '
        'where bubblewrap is missing or cannot set up its sandbox; `"none"` runs it without isolation.\n\n'
        "In bubblewrap's sandbox the system is read-only, the copy of the folder is the only writable "
        "place, and the command has no home directory, no other program's sockets, no network and a "
        'scrubbed environment. With `"none"` it runs as you: it can read and write your files and use '
        "the network. Either way everything it started ends with it.",
        trusted_only=True,
    )
    verify_timeout: float = setting(
        60.0,
        doc="Seconds one run of `#verifyCommand#` may take before it is stopped and counted as failed.",
        bounds=(1, 3600),
    )
    # 2: on the eval's Fix tasks no task passed on a third write, and a failing Fix is done much sooner
    # with two (docs/quality.md, "Measured once").
    max_verify_attempts: int = setting(
        2,
        doc="How many proposed edits `#verifyCommand#` checks per request before the first failed one is "
        "returned, marked as failed.",
        bounds=(1, 10),
    )
    speculative: bool = setting(
        True,
        doc="Speculative decoding: while the model writes, the code it was shown serves as a draft of what "
        "comes next, and the model checks a whole draft at once instead of writing one token at a time. A "
        "Fix or Document that writes a function back decodes about 1.8x as fast on a CPU. Greedy answers "
        "are the model's own, but a near-tie between two tokens may go the other way than without "
        "drafting (a batch rounds differently from one token at a time); the same request still gives "
        "the same answer every time. Drafting pauses where drafts keep failing, so chat is not slower. "
        "Off: one token at a time.",
        reloads_model=True,
        local_only=True,
    )
    # Warming the cache in the background (lsp_server.lsp.warming).
    warm: bool = setting(
        True,
        doc="Warm the model's cache in the background while you read: an open file's prompt when it is "
        "opened and after typing pauses, and each answer for the follow-up, so that a first question about "
        "the file evaluates only the question. Off: the model runs only when you ask something.\n\n"
        "The server lists the warm files in `assistant/status`; VS Code's status bar shows a flame when "
        "the active file is warm.",
        local_only=True,
    )
    # Inline completion while typing (lsp_server.lsp.completion).
    completion: bool = setting(
        True,
        doc="Inline completion: while you type, the model suggests the rest of the line or a few lines as "
        "ghost text. Off: the server offers none (and VS Code sends no completion requests).\n\n"
        "`Tab` accepts it, `Ctrl+Right` (`Cmd+Right` on macOS) accepts its next word, `Escape` dismisses "
        "it. The server does not suggest when more than a few characters follow the cursor, or when the "
        "model has no fill-in-the-middle tokens.",
        local_only=True,
    )
    completion_time_budget_ms: int = setting(
        1000,
        doc="Milliseconds a completion may run before it stops at the end of the line it is writing: a "
        "longer budget allows longer, multi-line suggestions; a shorter one keeps them quick on a slow "
        "machine.",
        bounds=(50, 60000),
        local_only=True,
    )
    completion_recent_files: bool = setting(
        False,  # make bench (typing-other-files): no more exact matches on the 0.5B, more tokens read
        doc="Inline completion sees a few chunks of the files you opened, edited or saved recently (those "
        "most like the code around the cursor, about 500 tokens), so that it can use names defined there. "
        "Off: it sees only the file being completed.\n\n"
        "The chunks it used are listed in `assistant/stats` (`lastCompletion.extra`).",
        local_only=True,
    )
    # Next-edit suggestions (lsp_server.lsp.next_edit).
    next_edit: bool = setting(
        True,
        doc="Next-edit suggestions: once typing pauses, the model predicts the edit you are likely to make "
        "next from your recent edits (the rest of a rename, the same change to a similar line), and the "
        "editor shows it where it applies, also away from the cursor. `Tab` jumps to a suggestion away "
        "from the cursor and accepts one at it; `Escape` dismisses it. Off: the server suggests nothing.",
        local_only=True,
    )
    next_edit_delay_ms: int = setting(
        400,
        doc="Milliseconds of no typing before the editor asks for a next-edit suggestion.",
        bounds=(100, 5000),
    )
    # MCP tool servers in chat (lsp.mcp, assistant/tools/mcp_*.py): they run commands, so never from an
    # untrusted workspace.
    mcp_servers: tuple[McpServerConfig, ...] = setting(
        (),
        doc="MCP (Model Context Protocol) servers whose tools chat may call, as other editors configure "
        'them: `{"name": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}}` for a server the '
        'language server starts (stdio), or `{"name": {"url": "https://..."}}` for one it reaches over '
        "streamable HTTP.\n\n"
        "A server starts when a chat first needs it, and again after it stopped; a tool is offered to "
        "the model as `name.tool`, after the built-in tools, at most "
        f"{MAX_LOCAL_TOOLS} of them per conversation with the local model "
        f"({MAX_REMOTE_TOOLS} with a remote `#backend#`). A call to a tool that does not declare "
        "itself read-only asks you first. Code actions never use them. `${workspaceFolder}`, "
        "`${env:NAME}` and `${NAME}` in a command, its arguments, environment and folder are replaced; "
        "the server gets `HOME`, `PATH`, `USER`, `SHELL`, `TERM` and `LOGNAME` of the language server's "
        "environment, and what `env` sets. **It runs the commands you give**, so it is read only in a "
        "trusted workspace.",
        trusted_only=True,
    )
    mcp_tool_choice: McpToolChoice = setting(  # noqa: RUF009 (a Literal default is a plain string)
        "relevant",
        doc='Which of the MCP servers\' tools a new chat conversation is offered: `"relevant"`, those of '
        "the servers its first message names (by the server's name or a tool's, else by a word of a tool's "
        "name), all of them where they fit in the limit, else those whose names and descriptions best "
        "match it; none when it names none. The prompt a question that names one server gets is read "
        "ahead for the first servers (as many as `#slots#` less two), so such a question, or one that "
        "names none, reads only itself. "
        '`"first"`, the first ones in the order of `#mcpServers#` and of each server\'s '
        "list (the same for every conversation, so its prompt is read once).",
    )
    mcp_workspace_servers: bool = setting(
        True,
        doc="Also start the MCP servers the workspace's own files declare: `.vscode/mcp.json` "
        '(`"servers"`) and `.mcp.json` (`"mcpServers"`), after those of `#mcpServers#` (whose name '
        "wins).\n\n"
        "**These commands come with the repository**, so they run only in a trusted workspace.",
        trusted_only=True,
        untrusted=False,
    )
    # None: the model runs in this process ("local"); else an OpenAI-compatible server (engine.remote).
    backend: RemoteConfig | None = setting(  # noqa: RUF009 (as above)
        None,
        doc='Where the model runs: `"local"`, in the language server\'s process (the model of `#model#`); '
        'or `{"url": "http://host:port/v1", "model": "NAME", "apiKeyEnv": "VAR", "timeout": 600}`, an '
        "OpenAI-compatible server that answers instead (llama.cpp's `llama-server`, vLLM), such as a "
        "team's shared GPU machine. The API key is read from the environment variable `apiKeyEnv` names: "
        "the key itself is never a setting.\n\n"
        "For example:\n\n"
        "```json\n"
        '"llamaLsp.backend": {\n'
        '  "url": "http://gpu-box:8080/v1",\n'
        '  "model": "qwen2.5-coder-7b",\n'
        '  "apiKeyEnv": "LLAMA_API_KEY"\n'
        "}\n"
        "```\n\n"
        "`model` (optional where the server serves one model: that one answers, and the status names "
        "it) is the name that server serves it under. `apiKeyEnv` (optional) names the environment "
        "variable that holds the API key; the server reads it from the environment VS Code was started "
        "with, so the key is not stored in settings.json. `timeout` (optional, seconds, default 600) is "
        "the longest wait for the server's next bytes; a request ends within `timeout` plus "
        f"{SECONDS_PER_TOKEN:g} s per token it may write (`#maxTokens#`), whatever the server does. The "
        "files you ask about are sent to that URL.",
        restricted=True,
    )

    def engine_fields(self) -> tuple[Any, ...]:
        """What reloading the model depends on."""
        if self.backend is not None:
            return (self.backend,)
        return tuple(getattr(self, spec.name) for spec in SPECS if spec.reloads_model)

    @property
    def engine_name(self) -> str:
        """The model as the status names it."""
        if self.backend is not None:
            # Without a name, the model is the one the server serves: the ready status names it (server.py).
            return f"{self.backend.model or 'the model'} at {self.backend.shown_url}"
        return self.model


@dataclass(frozen=True)
class SettingSpec:
    """One setting as the generators and the conversion read it."""

    name: str  # the field of Settings
    wire: str  # the key in initializationOptions and the `llamaLsp` section
    kind: Kind
    default: Any  # as a client sends it (JSON): the value that means the server's default
    doc: str
    bounds: tuple[float, float] | None
    reloads_model: bool
    local_only: bool
    trusted_only: bool
    restricted: bool
    untrusted: Any  # what VS Code sends from an untrusted workspace; None: nothing (settings.setting)
    choices: tuple[str, ...] = ()  # a choice's values

    @property
    def summary(self) -> str:
        """The doc's first paragraph."""
        return self.doc.split("\n\n", 1)[0]


# The field's type -> its kind, and how a client sends the server's default when Python's is not JSON.
_KINDS: dict[Any, Kind] = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    Path: "path",  # the default depends on the machine ($XDG_CACHE_HOME): clients send none (null)
    str | None: "command",  # "" unsets it
    RemoteConfig | None: "backend",  # None is "local"
    tuple[str, ...]: "globs",  # a JSON array of strings
    tuple[McpServerConfig, ...]: "servers",  # a JSON object of servers by name
}
_WIRE_DEFAULTS: dict[Kind, Any] = {"path": None, "backend": "local", "servers": {}}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _specs() -> tuple[SettingSpec, ...]:
    hints = typing.get_type_hints(Settings)
    defaults = Settings()
    specs = []
    for field in dataclasses.fields(Settings):
        declared: _Declared = field.metadata["setting"]
        hint = hints[field.name]
        choices = typing.get_args(hint) if typing.get_origin(hint) is Literal else ()
        kind: Kind = "choice" if choices else _KINDS[hint]
        if (declared.bounds is not None) != (kind in ("int", "float")):
            raise TypeError(f"Settings.{field.name}: a number needs bounds, and only a number has them")
        default = _WIRE_DEFAULTS.get(kind, getattr(defaults, field.name))
        if kind == "command" and default is None:
            default = ""  # no command
        if kind == "globs":
            default = list(default)  # as JSON has it
        specs.append(
            SettingSpec(
                field.name, _camel(field.name), kind, default, **dataclasses.asdict(declared), choices=choices
            )
        )
    return tuple(specs)


SPECS = _specs()
_BY_NAME = {spec.name: spec for spec in SPECS}
_WIRE_NAMES = {spec.wire: spec.name for spec in SPECS}
_LIMITS = {spec.name: spec.bounds for spec in SPECS if spec.bounds is not None}


def merge(base: Settings, raw: Any) -> tuple[Settings, list[str]]:
    """Applies the client's values over base; returns the new settings and warnings about bad values."""
    if raw is None:
        return base, []
    if not isinstance(raw, dict):
        return base, [f"llama-lsp settings must be an object, not {type(raw).__name__}; using defaults"]
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for wire, value in raw.items():
        name = _WIRE_NAMES.get(wire)
        if name is None or value is None:
            continue
        try:
            changes[name] = _convert(_BY_NAME[name], value)
        except (TypeError, ValueError) as exc:
            # A backend may hold credentials, a server's env secrets.
            shown = "" if _BY_NAME[name].kind in ("backend", "servers") else f"={value!r}"
            warnings.append(f"llama-lsp setting {wire}{shown} ignored: {exc}")
    return dataclasses.replace(base, **changes), warnings


def _convert(spec: SettingSpec, value: Any) -> Any:
    if spec.kind == "backend":
        return _backend(value)
    if spec.kind == "command":
        if not isinstance(value, str):
            raise TypeError("expected a shell command string")
        return value.strip() or None
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return value
    if spec.kind == "path":
        if not isinstance(value, str) or not value:
            raise ValueError("expected a path")
        return Path(value).expanduser()
    if spec.kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise ValueError("expected a non-empty string")
        return value.strip()
    if spec.kind == "globs":
        return _globs(value)
    if spec.kind == "servers":
        return parse_servers(value)
    if spec.kind == "choice":
        if value not in spec.choices:
            raise ValueError("expected " + " or ".join(f'"{choice}"' for choice in spec.choices))
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("expected a number")
    low, high = _LIMITS[spec.name]
    if not low <= value <= high:
        raise ValueError(f"expected {low} to {high}")
    if spec.kind == "int":
        if value != int(value):
            raise ValueError("expected a whole number")
        return int(value)
    return float(value)


MAX_GLOBS = 200
MAX_GLOB_CHARS = 500


def _globs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("expected a list of glob patterns (strings)")
    globs = tuple(item.strip() for item in value if item.strip())
    if len(globs) > MAX_GLOBS or any(len(item) > MAX_GLOB_CHARS for item in globs):
        raise ValueError(f"expected at most {MAX_GLOBS} patterns of at most {MAX_GLOB_CHARS} characters")
    return globs


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The shape `_backend` takes, as JSON Schema (VS Code checks settings.json against it).
BACKEND_SCHEMA: dict[str, Any] = {
    "pattern": "^local$",
    "patternErrorMessage": '"local", or an object with "url" (and "model" where the server serves several)',
    "properties": {
        "url": {
            "type": "string",
            "pattern": "^https?://",
            "description": "The server's OpenAI-compatible API, e.g. http://gpu-box:8080/v1.",
        },
        "model": {
            "type": "string",
            "minLength": 1,
            "description": "The model name the server serves (llama-server's --alias, "
            "vLLM's --served-model-name); optional where it serves one model.",
        },
        "apiKeyEnv": {
            "type": "string",
            "pattern": f"^{_ENV_NAME.pattern}$",
            "description": "The name of the environment variable that holds the API key (not the key "
            "itself).",
        },
        "timeout": {
            "type": "number",
            "minimum": 1,
            "maximum": 3600,
            "default": RemoteConfig.timeout_s,
            "description": "Seconds to wait for the server's next bytes (the first come once it has read "
            f"the prompt). A request ends within this plus {SECONDS_PER_TOKEN:g} s per token it may write.",
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}


# One MCP server of `mcpServers`, as JSON Schema (VS Code checks settings.json against it).
MCP_SERVER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The program that runs the server over stdio."},
        "args": {"type": "array", "items": {"type": "string"}, "description": "Its arguments."},
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Environment variables it gets besides HOME, PATH, USER, SHELL, TERM, LOGNAME.",
        },
        "cwd": {"type": "string", "description": "Its working folder; default: the first workspace folder."},
        "url": {"type": "string", "pattern": "^https?://", "description": "A streamable HTTP server."},
        "type": {"enum": ["stdio", "http"], "description": "As VS Code's mcp.json says it; optional."},
    },
    "additionalProperties": False,
}


def _backend(value: Any) -> RemoteConfig | None:
    """ "local", or {"url", "model"?, "apiKeyEnv"?, "timeout"?}: the key itself is never a setting, only
    where it is."""
    if value == "local":
        return None
    if not isinstance(value, dict):
        raise TypeError('expected "local" or {"url": "http://host:port/v1", "model": "..."}')
    url, model, key_env = value.get("url"), value.get("model"), value.get("apiKeyEnv")
    if not isinstance(url, str) or urlsplit(url.strip()).scheme not in ("http", "https"):
        raise ValueError("backend.url must be an http:// or https:// URL, e.g. http://host:8080/v1")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError("backend.model must name the model the server serves, or be left out")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        raise ValueError("backend.apiKeyEnv must be the name of an environment variable, not the key")
    timeout = value.get("timeout", RemoteConfig.timeout_s)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 3600:
        raise ValueError("backend.timeout must be seconds, 1 to 3600")
    return RemoteConfig(
        url=url.strip().rstrip("/"),
        model=model.strip() if model is not None else None,
        api_key_env=key_env or None,
        timeout_s=float(timeout),
    )
