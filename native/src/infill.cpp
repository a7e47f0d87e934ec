// infill.cpp: fill-in-the-middle prompts, built from the model's own FIM tokens.
//
// The tokens come from the vocabulary (llama_vocab_fim_pre/suf/mid/rep/sep), never from a table of
// model names: a model without prefix, suffix and middle tokens gets no completion. Where the model
// also has the repository-level tokens (Qwen2.5-Coder's <|repo_name|> and <|file_sep|>), other files
// come first, the layout llama-server's /infill uses too:
//
//   [FIM_REP]repo\n [FIM_SEP]other/file\n<its text> ... [FIM_SEP]this/file\n
//   [FIM_PRE]<lines above the cursor><the line up to the cursor>[FIM_SUF]<text after it>[FIM_MID]
//
// Everything before the cursor's line changes least while the user types, so it comes first and is
// tokenized apart from that line: consecutive keystrokes share every token up to the line being typed.
// User text is tokenized without special tokens, so code that spells "<|fim_prefix|>" stays text.

#include "engine.h"

namespace llama_lsp {

namespace {

void append_text(const llama_vocab * vocab, std::vector<llama_token> & tokens, const std::string & text) {
    if (text.empty()) return;
    auto more = common_tokenize(vocab, text, /*add_special=*/false, /*parse_special=*/false);
    tokens.insert(tokens.end(), more.begin(), more.end());
}

std::string text_field(const json & obj, const char * key) {
    return get_or<std::string>(obj, key, "");
}

}  // namespace

bool can_infill(const llama_vocab * vocab) {
    return llama_vocab_fim_pre(vocab) != LLAMA_TOKEN_NULL && llama_vocab_fim_suf(vocab) != LLAMA_TOKEN_NULL &&
           llama_vocab_fim_mid(vocab) != LLAMA_TOKEN_NULL;
}

std::vector<llama_token> infill_tokens(const llama_vocab * vocab, const json & fim) {
    if (!fim.is_object()) {
        throw engine_error("invalid_request", "fim must be an object");
    }
    if (!can_infill(vocab)) {
        throw engine_error("invalid_request", "the model has no fill-in-the-middle tokens, so it cannot complete code");
    }
    std::vector<llama_token> tokens;
    if (llama_vocab_get_add_bos(vocab)) {
        tokens.push_back(llama_vocab_bos(vocab));
    }
    const llama_token rep = llama_vocab_fim_rep(vocab);
    const llama_token sep = llama_vocab_fim_sep(vocab);
    const std::string repo = text_field(fim, "repo");
    if (rep != LLAMA_TOKEN_NULL && !repo.empty()) {
        tokens.push_back(rep);
        append_text(vocab, tokens, repo + "\n");
    }
    if (sep != LLAMA_TOKEN_NULL) {
        // Without a file separator the model was not trained on other files in its prompt: none go in.
        const json extra = fim.contains("extra") ? fim["extra"] : json::array();
        if (!extra.is_array()) {
            throw engine_error("invalid_request", "fim.extra must be an array of {filename, text}");
        }
        for (const auto & chunk : extra) {
            if (!chunk.is_object()) {
                throw engine_error("invalid_request", "fim.extra must be an array of {filename, text}");
            }
            std::string text = text_field(chunk, "text");
            if (!text.empty() && text.back() != '\n') text += '\n';
            tokens.push_back(sep);
            append_text(vocab, tokens, text_field(chunk, "filename") + "\n" + text);
        }
        const std::string filename = text_field(fim, "filename");
        if (!filename.empty()) {
            tokens.push_back(sep);
            append_text(vocab, tokens, filename + "\n");
        }
    }
    tokens.push_back(llama_vocab_fim_pre(vocab));
    append_text(vocab, tokens, text_field(fim, "prefix"));
    append_text(vocab, tokens, text_field(fim, "prompt"));
    tokens.push_back(llama_vocab_fim_suf(vocab));
    append_text(vocab, tokens, text_field(fim, "suffix"));
    tokens.push_back(llama_vocab_fim_mid(vocab));
    return tokens;
}

}  // namespace llama_lsp
