"""The server's settings: from initializationOptions and the `llamaLsp` configuration section.

Keys are camelCase on the wire. A bad value falls back to its default with a warning the client sees,
instead of failing the whole start.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..engine import RemoteConfig, models

SECTION = "llamaLsp"


@dataclass(frozen=True)
class Settings:
    model: str = models.DEFAULT_MODEL
    context_size: int = 8192
    threads: int = 0  # 0: the engine's default for a busy machine
    slots: int = 4
    cache_dir: Path = dataclasses.field(default_factory=models.cache_root)
    max_tool_steps: int = 6
    temperature: float = 0.0
    max_tokens: int = 1024
    # Checking edits (lsp_server.verify): unset by default, since the command runs code the model wrote.
    verify_command: str | None = None
    verify_timeout: float = 60.0
    max_verify_attempts: int = 3
    # Warming the cache in the background (lsp_server.lsp.warming).
    warm: bool = True
    # None: the model runs in this process ("local"); else an OpenAI-compatible server (engine.remote).
    backend: RemoteConfig | None = None
    # Inline completion while typing (lsp_server.lsp.completion).
    completion: bool = True
    completion_time_budget_ms: int = 1000  # once over it, a completion ends at the next line break

    def engine_fields(self) -> tuple[Any, ...]:
        """What reloading the model depends on."""
        if self.backend is not None:
            return (self.backend,)
        return (self.model, self.context_size, self.threads, self.slots, self.cache_dir)

    @property
    def engine_name(self) -> str:
        """The model as the status names it."""
        if self.backend is not None:
            return f"{self.backend.model} at {self.backend.url}"
        return self.model


_WIRE_NAMES = {
    "model": "model",
    "contextSize": "context_size",
    "threads": "threads",
    "slots": "slots",
    "cacheDir": "cache_dir",
    "maxToolSteps": "max_tool_steps",
    "temperature": "temperature",
    "maxTokens": "max_tokens",
    "verifyCommand": "verify_command",
    "verifyTimeout": "verify_timeout",
    "maxVerifyAttempts": "max_verify_attempts",
    "warm": "warm",
    "backend": "backend",
    "completion": "completion",
    "completionTimeBudgetMs": "completion_time_budget_ms",
}

_LIMITS: dict[str, tuple[float, float]] = {
    "context_size": (256, 131072),
    "threads": (0, 256),
    "slots": (1, 32),
    "max_tool_steps": (1, 32),
    "temperature": (0.0, 2.0),
    "max_tokens": (1, 32768),
    "verify_timeout": (1, 3600),
    "max_verify_attempts": (1, 10),
    "completion_time_budget_ms": (50, 60000),
}


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
        default = getattr(base, name)
        try:
            changes[name] = _convert(name, value, default)
        except (TypeError, ValueError) as exc:
            warnings.append(f"llama-lsp setting {wire}={value!r} ignored: {exc}")
    return dataclasses.replace(base, **changes), warnings


def _convert(name: str, value: Any, default: Any) -> Any:
    if name == "backend":
        return _backend(value)
    if name == "verify_command":  # the one optional string: empty unsets it
        if not isinstance(value, str):
            raise TypeError("expected a shell command string")
        return value.strip() or None
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return value
    if isinstance(default, Path):
        if not isinstance(value, str) or not value:
            raise ValueError("expected a path")
        return Path(value).expanduser()
    if isinstance(default, str):
        if not isinstance(value, str) or not value.strip():
            raise ValueError("expected a non-empty string")
        return value.strip()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("expected a number")
    low, high = _LIMITS[name]
    if not low <= value <= high:
        raise ValueError(f"expected {low} to {high}")
    if isinstance(default, int):
        if value != int(value):
            raise ValueError("expected a whole number")
        return int(value)
    return float(value)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _backend(value: Any) -> RemoteConfig | None:
    """ "local", or {"url", "model", "apiKeyEnv"}: the key itself is never a setting, only where it is."""
    if value == "local":
        return None
    if not isinstance(value, dict):
        raise TypeError('expected "local" or {"url": "http://host:port/v1", "model": "..."}')
    url, model, key_env = value.get("url"), value.get("model"), value.get("apiKeyEnv")
    if not isinstance(url, str) or urlsplit(url.strip()).scheme not in ("http", "https"):
        raise ValueError("backend.url must be an http:// or https:// URL, e.g. http://host:8080/v1")
    if not isinstance(model, str) or not model.strip():
        raise ValueError("backend.model must name the model the server serves")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        raise ValueError("backend.apiKeyEnv must be the name of an environment variable, not the key")
    timeout = value.get("timeout", RemoteConfig.timeout_s)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 3600:
        raise ValueError("backend.timeout must be seconds, 1 to 3600")
    return RemoteConfig(
        url=url.strip().rstrip("/"),
        model=model.strip(),
        api_key_env=key_env or None,
        timeout_s=float(timeout),
    )
