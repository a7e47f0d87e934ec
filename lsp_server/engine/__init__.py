"""The engines behind one interface (api.ChatEngine): the in-process engine that drives the native
binding from one worker thread (local; native is the only module that touches cffi), the remote engine
that talks to an OpenAI-compatible server (remote), and the model catalogue (models).

What the layers above use is re-exported here; remote is imported where a remote backend is
configured, since the `openai` package takes a second to import.
"""

from .api import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    EngineClosed,
    EngineError,
    InfillRequest,
    RemoteConfig,
    Stats,
    ToolCall,
)
from .local import Engine, EngineConfig, model_cache_key

__all__ = [
    "ChatEngine",
    "ChatRequest",
    "ChatResult",
    "Engine",
    "EngineClosed",
    "EngineConfig",
    "EngineError",
    "InfillRequest",
    "RemoteConfig",
    "Stats",
    "ToolCall",
    "model_cache_key",
]
