"""The engines: the native binding (native, the only module that touches cffi), the in-process engine
that drives it from one worker thread (local), and the model catalogue (models).

The in-process engine's interface is re-exported here: what the layers above use.
"""

from .local import (
    ChatRequest,
    ChatResult,
    Engine,
    EngineClosed,
    EngineConfig,
    EngineError,
    Stats,
    ToolCall,
    model_cache_key,
)

__all__ = [
    "ChatRequest",
    "ChatResult",
    "Engine",
    "EngineClosed",
    "EngineConfig",
    "EngineError",
    "Stats",
    "ToolCall",
    "model_cache_key",
]
