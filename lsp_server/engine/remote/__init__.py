"""The remote engine (api.ChatEngine over an OpenAI-compatible server), by concern: the engine itself
(engine.py), the streamed answer it builds (stream.py), the server-sent events it reads (sse.py), the
limits on what it reads (limits.py), and the EngineErrors it raises (errors.py).

Imported only where a remote backend is configured: the `openai` package takes a second to import.
"""

from .engine import RemoteEngine
from .stream import StreamedAnswer

__all__ = ["RemoteEngine", "StreamedAnswer"]
