"""What tests, bench and eval share to drive real components: llama.cpp's llama-server built from the
pinned source (llama_server.py) and a tiny random-weight GGUF model (tiny_model.py).

Not part of the installed package: it lives beside tests/, bench/ and eval/ so that none of them has to
import from another's folder.
"""
