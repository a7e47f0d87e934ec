"""The language server: JSON-RPC framing, the server and its handlers, the features (chat, code
actions), the document-turn service they share, documents, the protocol and the settings."""
