"""MCP tool servers as users configure them: the shapes other editors already use, read into one record.

`{name: {"command", "args", "env", "cwd"}}` starts a server over stdio, `{name: {"url"}}` reaches one over
streamable HTTP: Zed's `context_servers`, Continue's and Claude's `mcpServers` (`.mcp.json`), and VS Code's
`.vscode/mcp.json` (`"servers"`, each with a `"type"`). In commands, arguments, environment values and
working folders, `${workspaceFolder}` is the first workspace folder, and `${env:NAME}` (VS Code) or
`${NAME}` (Claude) an environment variable of the language server's. Plain Python: the language server
decides where the configuration comes from and whether the workspace is trusted (lsp/mcp.py).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Where a workspace declares its own servers, and the key that holds them in each file.
PROJECT_FILES: tuple[tuple[str, str], ...] = ((".vscode/mcp.json", "servers"), (".mcp.json", "mcpServers"))

# Small local models stop calling tools correctly past a handful (the field's reports; Copilot caps a
# request at 128, Cursor sends 40). 16 holds the whole tool list of each published reference server
# (filesystem 14, git 12, memory 9), so a question that names one gets all its tools, whose prompt the
# warming reads ahead: with the 1.5B, `make eval-mcp`'s 3 servers got 15 of 20 right so, against 17 of 20
# with the 8 that best matched each question and that prompt read anew (docs/quality.md).
MAX_LOCAL_TOOLS = 16
MAX_REMOTE_TOOLS = 40
MAX_SERVERS = 32
MAX_FILE_BYTES = 256 * 1024
# A server's name is the first part of its tools' names (`server.tool`), which the model writes back.
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")

_VARIABLE = re.compile(r"\$\{(?:(env):)?([A-Za-z_][A-Za-z0-9_]*)\}")


class McpConfigError(ValueError):
    """A configuration that cannot be used; the message says what is wrong with it."""


@dataclass(frozen=True)
class McpServerConfig:
    """One server: a command to run over stdio, or a URL (streamable HTTP). Frozen and hashable, so a
    settings change that leaves a server as it was leaves it running."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    source: str = "settings"  # "settings", or the project file that declared it

    @property
    def shown(self) -> str:
        """What the server is, for a log line or the stats (no environment: it may hold secrets)."""
        if self.url is not None:
            parts = urlsplit(self.url)
            return f"{parts.scheme}://{parts.hostname}{parts.path}"  # no credentials, no query
        return " ".join([self.command or "", *self.args])[:200]


def parse_servers(value: Any, source: str = "settings") -> tuple[McpServerConfig, ...]:
    """`{name: {...}}` as a tuple of servers in the order given; raises McpConfigError on a bad one.

    An empty list counts as no servers (some clients encode an empty table as `[]`).
    """
    if value == [] or value is None:
        return ()
    if not isinstance(value, dict):
        raise McpConfigError('expected an object of servers, {"name": {"command": ..., "args": [...]}}')
    if len(value) > MAX_SERVERS:
        raise McpConfigError(f"at most {MAX_SERVERS} servers")
    return tuple(_server(name, entry, source) for name, entry in value.items())


def _server(name: Any, entry: Any, source: str) -> McpServerConfig:
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise McpConfigError(
            f"server name {str(name)[:50]!r}: use letters, digits, '_' and '-' (at most 40), since the "
            "model writes it as part of each tool's name"
        )
    if not isinstance(entry, dict):
        raise McpConfigError(f"server {name}: expected an object with a command or a url")
    kind = entry.get("type")
    if kind is not None and kind not in ("stdio", "http"):
        raise McpConfigError(f"server {name}: type {str(kind)[:20]!r} is not supported (stdio or http)")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise McpConfigError(f"server {name}: give either a command (stdio) or a url (streamable HTTP)")
    if url is not None:
        if not isinstance(url, str) or urlsplit(url.strip()).scheme not in ("http", "https"):
            raise McpConfigError(f"server {name}: url must be an http:// or https:// URL")
        if set(entry) - {"type", "url"}:
            extra = ", ".join(sorted(set(entry) - {"type", "url"}))
            raise McpConfigError(f"server {name}: a url server takes no {extra} (headers are not supported)")
        return McpServerConfig(name, url=url.strip(), source=source)
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f"server {name}: command must be a non-empty string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise McpConfigError(f"server {name}: args must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpConfigError(f"server {name}: env must be an object of strings")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise McpConfigError(f"server {name}: cwd must be a path")
    return McpServerConfig(
        name,
        command=command.strip(),
        args=tuple(args),
        env=tuple(sorted(env.items())),
        cwd=cwd,
        source=source,
    )


def project_servers(folder: Path) -> tuple[list[McpServerConfig], list[str]]:
    """The servers a workspace folder's own files declare (.vscode/mcp.json, then .mcp.json), and
    warnings about the files or entries that could not be used. Only for a trusted workspace: these
    commands come with the repository."""
    servers: list[McpServerConfig] = []
    warnings: list[str] = []
    for relative, key in PROJECT_FILES:
        path = folder / relative
        try:
            if not path.is_file():
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                raise McpConfigError(f"larger than {MAX_FILE_BYTES // 1024} KB")
            data = json.loads(_without_comments(path.read_text(encoding="utf-8")))
            if not isinstance(data, dict):
                raise McpConfigError("expected a JSON object")
            entries = data.get(key) or {}
            if not isinstance(entries, dict):
                raise McpConfigError(f'"{key}" must be an object')
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, McpConfigError) as exc:
            warnings.append(f"{path}: {exc}")
            continue
        for name, entry in entries.items():
            try:
                servers.extend(parse_servers({name: entry}, relative))
            except McpConfigError as exc:
                warnings.append(f"{path}: {exc}")
    return servers, warnings


def _without_comments(text: str) -> str:
    """VS Code's JSON with comments (mcp.json) as JSON: `//` and `/* */` comments outside strings, and
    trailing commas, removed."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def expand(config: McpServerConfig, workspace_folder: Path | None) -> McpServerConfig:
    """The server with `${workspaceFolder}`, `${env:NAME}` and `${NAME}` replaced; raises McpConfigError
    for a variable that has no value (VS Code's `${input:...}` prompts among them)."""

    def one(text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            env, name = match.group(1), match.group(2)
            if not env and name == "workspaceFolder":
                if workspace_folder is None:
                    raise McpConfigError(f"server {config.name}: ${{workspaceFolder}} but no folder is open")
                return str(workspace_folder)
            value = os.environ.get(name)
            if value is None:
                raise McpConfigError(f"server {config.name}: the environment variable {name} is not set")
            return value

        expanded = _VARIABLE.sub(replace, text)
        if "${" in expanded:
            raise McpConfigError(
                f"server {config.name}: {text[:80]!r} holds a variable that is not supported"
            )
        return expanded

    return McpServerConfig(
        config.name,
        command=one(config.command) if config.command is not None else None,
        args=tuple(one(arg) for arg in config.args),
        env=tuple((key, one(value)) for key, value in config.env),
        cwd=one(config.cwd) if config.cwd is not None else None,
        url=one(config.url) if config.url is not None else None,
        source=config.source,
    )
