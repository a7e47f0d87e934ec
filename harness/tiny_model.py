"""A tiny random-weight GGUF model, so tests can drive the real native engine in about a second.

The model is a 2-layer "llama" with 64-wide F32 weights and a byte-level "gpt2" tokenizer: all
256 bytes are tokens, so any text (non-ASCII UTF-8 included) tokenizes. It has a ChatML chat
template (`<|im_start|>role ... <|im_end|>`) and `<|im_end|>` as its end-of-generation token.

Its weights are random but deterministic for a seed, and shaped so the model writes text rather
than stopping: embedding dimension 0 is a constant "bias" feature that the output head uses to
push the special tokens and every byte outside printable ASCII (plus newline) far down, so the
output is always valid UTF-8 and never ends on its own; use max_tokens to bound a generation.

    python harness/tiny_model.py OUT.gguf
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np

ARCH = "llama"
N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 128
CONTEXT_LENGTH = 32768

BOS, IM_START, EOS = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [BOS, IM_START, EOS]
# Fill-in-the-middle tokens (Qwen2.5-Coder's names), in a variant of the model for inline completion.
FIM_TOKENS = {"pre": "<|fim_prefix|>", "suf": "<|fim_suffix|>", "mid": "<|fim_middle|>"}

# A few BPE merges in rank order, written "left+right" ("Ġ" is a space). Each
# word's earlier merges build exactly its later merge's parts, so "Ġdef" and "Ġreturn" do form.
_MERGES_TEXT = """
Ġ+t h+e i+n e+r a+n o+n r+e Ġ+a Ġ+s Ġ+w Ġ+c Ġ+f Ġ+p e+s a+t o+r e+n i+s i+t l+e d+e
Ġt+he (+) )+: de+f Ġ+def re+t u+r ur+n ret+urn Ġ+in Ġ+Ġ ĠĠ+ĠĠ
"""
MERGES = [pair.replace("+", " ") for pair in _MERGES_TEXT.split()]

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{{- (message['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible mapping of bytes to printable characters."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def vocabulary(fim: bool = False) -> tuple[list[str], list[str], list[int]]:
    """The tokens (byte b is token b, then merges, then specials), the merges, the token types."""
    specials = [*SPECIAL_TOKENS, *(FIM_TOKENS.values() if fim else ())]
    to_unicode = byte_to_unicode()
    tokens = [to_unicode[b] for b in range(256)]
    merges: list[str] = []
    for merge in MERGES:
        left, right = merge.split(" ")
        assert left in tokens and right in tokens and left + right not in tokens, merge
        merges.append(merge)
        tokens.append(left + right)
    types = [gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * len(specials)
    return tokens + specials, merges, [int(t) for t in types]


def _allowed_outputs(tokens: list[str]) -> np.ndarray:
    """Which tokens the model may write: merges and printable ASCII bytes, newline included."""
    to_unicode = byte_to_unicode()
    allowed_bytes = {to_unicode[b] for b in [*range(0x20, 0x7F), ord("\n")]}
    specials = {*SPECIAL_TOKENS, *FIM_TOKENS.values()}
    return np.array([t in allowed_bytes or (len(t) > 1 and t not in specials) for t in tokens])


def write_tiny_model(path: Path, *, seed: int = 0, fim: bool = False) -> Path:
    """Writes the tiny model to `path` (about 450 KB) and returns `path`; with `fim`, its vocabulary
    also has fill-in-the-middle tokens."""
    tokens, merges, types = vocabulary(fim)
    n_vocab = len(tokens)
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    ones = np.ones(N_EMBD, dtype=np.float32)
    head_dim = N_EMBD // N_HEAD

    # Dimension 0 of every embedding is a large constant, so after the final RMS norm it is a
    # steady positive feature; output rows weigh it 0 (allowed tokens) or strongly negative.
    token_embd = normal(n_vocab, N_EMBD, scale=0.1)
    token_embd[:, 0] = 1.0
    output = normal(n_vocab, N_EMBD, scale=0.5)
    output[:, 0] = np.where(_allowed_outputs(tokens), 0.0, -4.0)

    writer = gguf.GGUFWriter(str(path), ARCH)
    writer.add_name("llama-lsp tiny test model")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-6)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index(BOS))
    writer.add_eos_token_id(tokens.index(EOS))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    if fim:
        for part, token in FIM_TOKENS.items():
            writer.add_uint32(f"tokenizer.ggml.fim_{part}_token_id", tokens.index(token))

    writer.add_tensor("token_embd.weight", token_embd)
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", output)
    for i in range(N_LAYER):
        # numpy shapes are (out, in): GGUF stores dimensions in reverse.
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.attn_q.weight", normal(N_HEAD * head_dim, N_EMBD))
        writer.add_tensor(f"blk.{i}.attn_k.weight", normal(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(f"blk.{i}.attn_v.weight", normal(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(f"blk.{i}.attn_output.weight", normal(N_EMBD, N_HEAD * head_dim))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", normal(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", normal(N_FF, N_EMBD))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", normal(N_EMBD, N_FF))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python harness/tiny_model.py OUT.gguf")
    print(write_tiny_model(Path(sys.argv[1])))
