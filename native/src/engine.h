// engine.h: the engine's private header, shared by the files behind llama_lsp.h (never installed).
//
// One model and one context, opened once. Each slot is a llama.cpp sequence with its own KV stream,
// and records exactly the tokens its cells hold. A generate call picks a slot, gives it the longest
// cached prefix of its prompt (its own, a copy of another slot's, or a state saved on disk), evaluates
// only the rest, and commits the new record only on the happy path (cache_guard): any failure leaves
// the slot empty, never out of step with its cells.
//
// Exact reuse. Logits depend on how a prompt is cut into batches, so by default every evaluation is
// cut where its own tokens say (chunk_end in slots.cpp): before each token that opens a chat message,
// and every prefill_chunk tokens after that. Where a prompt is cut depends only on the tokens before
// the cut, so a warm run cuts the shared prefix exactly where a cold run does; reuse stops at such a
// cut inside the common prefix, and the KV written while decoding (one token at a time) is dropped
// after the answer. A warm run then computes every position in the same chunk, in the same cells, as
// a cold run would, and a greedy answer cannot depend on what the cache held before. Because messages
// start chunks, a follow-up evaluates exactly its new messages, and a cache warmed with a
// conversation's messages (a "warm" request) holds exactly what the next question will reuse.
//
// Who owns what:
//   api.cpp          the C functions of llama_lsp.h, JSON in and out, opening the model, the log; the
//                    one place where every exception is caught (none crosses the C boundary)
//   chat_format.cpp  chat templates, tool calls, answer parsing, sampling parameters: the part of
//                    llama.cpp's API (common/chat.h) that changes most often
//   slots.cpp        picking a slot, sharing and trimming prefixes, the cache guard
//   state_files.cpp  saving slots to disk and restoring them (the files are untrusted)
//   text.cpp         pure text: UTF-8 completion, stop strings, JSON tool calls, streaming
//   infill.cpp       fill-in-the-middle prompts from the vocabulary's own FIM tokens
//   drafts.cpp       drafts for speculative decoding (common/speculative.h)
//   generate.cpp     one request: match, prefill, decode (verifying drafts), commit
#pragma once

// The public header is plain C without preprocessor lines (it doubles as the cffi declarations).
extern "C" {
#include "llama_lsp.h"
}

#include "chat.h"
#include "common.h"
#include "llama.h"
#include "sampling.h"
#include "speculative.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef LLAMA_LSP_SOURCE_ID
#define LLAMA_LSP_SOURCE_ID "unknown"
#endif

namespace llama_lsp {

using json = nlohmann::ordered_json;

constexpr const char * k_version = "0.1.0";

// An error with a machine-readable type, reported as {"error": {"type", "message"}} by api.cpp.
// The types are listed in llama_lsp.h.
struct engine_error : std::runtime_error {
    std::string type;
    engine_error(std::string type_, const std::string & message) : std::runtime_error(message), type(std::move(type_)) {}
};

// ---- JSON requests (api.cpp) -------------------------------------------------------------------------

// The value of key, or fallback when it is missing or null; a value of the wrong type is an
// "invalid_request" error.
template <typename T> T get_or(const json & obj, const char * key, T fallback) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return fallback;
    }
    try {
        return it->get<T>();
    } catch (const json::exception &) {
        throw engine_error("invalid_request", std::string("field '") + key + "' has the wrong type");
    }
}

// Logs a warning through the callback set with llama_lsp_set_log_callback (level 3).
__attribute__((format(printf, 1, 2))) void log_warning(const char * format, ...);

inline double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// ---- Slots and the engine ----------------------------------------------------------------------------

// One llama.cpp sequence and the record of what its cells hold.
struct slot {
    llama_seq_id id = 0;
    std::string key;                  // the name requests use to come back to it ("" = none)
    std::vector<llama_token> tokens;  // exactly what the KV cache holds for this sequence
    uint64_t last_used = 0;
    bool background = false;  // last used by a background request, so background requests may take it
    // The completion slot: only infill requests use it, and they use nothing else. Its cells are
    // reused up to the longest common prefix, answer included (inline completion needs no exactness),
    // so they are never shared with the other slots, never saved, and never evicted for them.
    bool infill = false;
};

// A slot saved on disk, loaded only when a request would reuse it.
struct saved_slot {
    std::string key;
    std::string path;
    std::vector<llama_token> tokens;
};

}  // namespace llama_lsp

// The handle of llama_lsp.h. Used by one thread at a time (api.cpp holds `busy` around every call),
// except cancel_requested, which any thread may set.
struct llama_lsp_engine {
    llama_model * model = nullptr;
    llama_context * ctx = nullptr;
    const llama_vocab * vocab = nullptr;
    common_chat_templates_ptr templates;
    std::vector<llama_lsp::slot> slots;
    std::vector<llama_lsp::saved_slot> saved;  // slots known on disk, newest first, not loaded yet
    std::string saved_dir;                     // where `saved` was read from or written to
    uint64_t clock = 0;
    int32_t prefill_chunk = 64;
    bool exact_reuse = true;
    bool speculative = true;  // requests draft from their own tokens unless they say otherwise (drafts.cpp)
    std::string flash_attn = "off";  // "on", "off" or "auto" (llama.cpp decides)
    llama_token message_start = LLAMA_TOKEN_NULL;  // the token that opens every chat message, if any
    bool can_trim = true;  // false for recurrent/hybrid memory: every request starts from scratch
    int32_t n_threads = 1;
    int32_t n_threads_batch = 2;
    std::string cache_key;
    std::string model_path;
    std::atomic<bool> cancel_requested{false};
    std::atomic<bool> yield_requested{false};  // stop reading the prompt at the next chunk boundary
    std::atomic<bool> abort_logged{false};
    std::mutex busy;

    ~llama_lsp_engine();

    llama_memory_t memory() const { return llama_get_memory(ctx); }

    // Forgets a pending cancel and yield (a generate call that ends, or llama_lsp_clear_cancel).
    void forget_stop_requests() {
        cancel_requested.store(false);
        yield_requested.store(false);
    }

    // Names the model and the build that wrote a saved state (state_files.cpp).
    std::string fingerprint() const;

    // Empties the slot's cells and its record (slots.cpp).
    void clear_slot(llama_lsp::slot & s);

    // Keeps the first n tokens of the slot; clears it if the memory cannot be trimmed exactly.
    void trim_slot(llama_lsp::slot & s, size_t n);

    // Where the chunk that starts at `from` (a cut) ends: at the next message start, after
    // prefill_chunk tokens, or at the end of the tokens.
    size_t chunk_end(const std::vector<llama_token> & tokens, size_t from) const;

    // How many of `cached` (cells evaluated earlier, cut by the same rule) `prompt` may keep without
    // evaluating them: at most `limit`, and for exact reuse only up to a cut that both share.
    size_t reusable(const std::vector<llama_token> & prompt, const std::vector<llama_token> & cached,
                    size_t limit, bool exact) const;
};

namespace llama_lsp {

// ---- Slots (slots.cpp) -------------------------------------------------------------------------------

size_t common_prefix(const std::vector<llama_token> & a, const std::vector<llama_token> & b);

// Picks the slot for a request: the one named for it, else (for unnamed requests) the one holding the
// longest common prefix, else a free or least-recently-used one. A background request takes only a
// free slot or one that background requests used last, and throws "no_slot" when there is none:
// warming never evicts a conversation.
// An infill request always gets the completion slot ("invalid_request" when the engine has none).
slot & pick_slot(llama_lsp_engine & e, const std::string & key, const std::vector<llama_token> & prompt,
                 bool background, bool infill);

// Gives the target slot the longest available prefix of the prompt that it may keep (at most `limit`
// tokens): its own, a fork of another slot's cells, or a saved state from disk.
void share_prefix(llama_lsp_engine & e, slot & target, const std::vector<llama_token> & prompt, size_t limit);

// Invalidates a slot unless the happy path commits: no failure can leave the cache out of step with
// the slot's record of its tokens.
class cache_guard {
  public:
    cache_guard(llama_lsp_engine & e, slot & s) : engine_(e), slot_(s) {}
    ~cache_guard() {
        if (!committed_) {
            engine_.clear_slot(slot_);
        }
    }
    void commit() { committed_ = true; }
    cache_guard(const cache_guard &) = delete;
    cache_guard & operator=(const cache_guard &) = delete;

  private:
    llama_lsp_engine & engine_;
    slot & slot_;
    bool committed_ = false;
};

// ---- Saved state (state_files.cpp) -------------------------------------------------------------------

// Loads a saved slot into target, an empty slot; on failure deletes the file and leaves the slot empty
// (perhaps every slot: a bad file can only be removed by clearing the whole memory).
bool load_saved_slot(llama_lsp_engine & e, slot & target, const saved_slot & saved);

json save_slots(llama_lsp_engine & e, const std::string & directory);
json restore_slots(llama_lsp_engine & e, const std::string & directory);

// ---- Chat format (chat_format.cpp) -------------------------------------------------------------------

// The prompt and, for chat requests, how to parse and constrain the answer.
struct prepared_prompt {
    std::string text;
    std::vector<llama_token> tokens;
    bool is_chat = false;
    bool has_tools = false;
    std::vector<std::string> tool_names;
    common_chat_params chat;
    common_chat_parser_params parse_params;  // loaded once per request, in prepare()
    std::string forced_prefix;  // text forced at the start of the answer (the tool-call opener)
    std::string continued;      // the answer's start the request gave (continue_answer): parsed, never streamed
    bool warm = false;          // rendered without the generation prompt: evaluated, not answered
    bool is_infill = false;     // a fill-in-the-middle prompt, for the completion slot
};

// Renders and tokenizes a request: {"prompt"} as is, {"fim"} as a fill-in-the-middle prompt
// (infill.cpp), or {"messages", "tools", ...} through the model's chat template. Throws
// "invalid_request" for a request it cannot render.
prepared_prompt prepare(llama_lsp_engine & e, const json & request);

// ---- Fill in the middle (infill.cpp) -----------------------------------------------------------------

// Whether the vocabulary has the prefix, suffix and middle tokens that infill prompts need.
bool can_infill(const llama_vocab * vocab);

// The tokens of a fill-in-the-middle request {"prefix", "prompt", "suffix", "filename", "repo",
// "extra": [{"filename", "text"}]}, laid out stable-first (see infill.cpp).
std::vector<llama_token> infill_tokens(const llama_vocab * vocab, const json & fim);

// The sampler's settings: the request's, plus the template's tool-call grammar when tools are on.
common_params_sampling sampling_params(llama_lsp_engine & e, const json & request, const prepared_prompt & p);

// The token that opens every message in the model's chat template (the first token of its generation
// prompt, when that is a control token such as <|im_start|>); LLAMA_TOKEN_NULL if there is none.
llama_token message_start_token(llama_lsp_engine & e);

// The literal a model writes to open a tool call, taken from the template's own grammar triggers.
std::string tool_call_opener(const common_chat_params & chat);

// Splits the raw answer into result["content"] and result["tool_calls"] with the template's parser.
void parse_answer(const prepared_prompt & p, const json & request, const std::string & raw, json & result);

// ---- Text (text.cpp): no llama.cpp state, tested on their own through llama_lsp_test_text ----------

// Length of the longest prefix of text that ends on a whole UTF-8 character.
size_t utf8_complete_prefix(const std::string & text);

// How many trailing bytes of text could be the start of one of the stop strings.
size_t stop_overlap(const std::string & text, const std::vector<std::string> & stops);

// Accepts a fenced or bare {"name": ..., "arguments": {...}} that names a declared tool as a call;
// rest is the text without it (and without its fence).
bool extract_json_call(const std::string & text, const std::vector<std::string> & tool_names,
                       common_chat_tool_call & call, std::string & rest);

// Where a tool call may begin in the answer so far: an opener (also when the text ends with part of
// it), or a JSON call that extract_json_call would take out of the content; text.size() if nowhere.
size_t tool_call_start(const std::string & raw, const std::vector<std::string> & openers,
                       const std::vector<std::string> & tool_names);

// s without leading and trailing spaces, tabs and line breaks.
std::string trim(const std::string & s);

// Sends streamed text: whole UTF-8 characters only, and never the start of a possible stop string.
// With tools, only text before anything that may become a tool call is sent, without its trailing
// whitespace, so that the pieces always add up to the parsed answer's content.
class piece_streamer {
  public:
    piece_streamer(llama_lsp_piece_cb cb, void * user_data, std::vector<std::string> stops, bool with_tools,
                   std::vector<std::string> openers, std::vector<std::string> tool_names);

    // Returns false when the receiver asks to stop. The final update passes the parsed content.
    bool update(const std::string & raw, const std::string * final_content = nullptr);

  private:
    llama_lsp_piece_cb cb_;
    void * user_data_;
    std::vector<std::string> stops_;
    bool with_tools_;
    std::vector<std::string> openers_;
    std::vector<std::string> tool_names_;
    size_t sent_ = 0;
    std::string sent_text_;
};

// ---- Drafts (drafts.cpp) ------------------------------------------------------------------------------

// How a request drafts: {"speculative": bool} and, for benchmarks and tests, {"debug_draft": {"type",
// "n_max", "n_min", "n_match", "adaptive", "spoil_after"}}.
struct draft_settings {
    bool enabled = true;
    // Measured on the eval's Document and Fix answers (1.5B, 1 thread, 2-core CPU): ngram-simple over
    // 8 tokens, 16 per draft, decoded 1.8x as fast as no drafting; ngram-mod 1.6-1.7x, longer drafts
    // and shorter or longer contexts less (drafts.cpp).
    std::string type = "ngram-simple";  // one of llama.cpp's n-gram drafters
    int32_t n_max = 16;                 // tokens per draft, at most
    int32_t n_min = 4;                  // no draft when fewer tokens than this may follow
    int32_t n_match = 8;                // tokens of context a draft must follow
    bool adaptive = true;            // pause after drafts that were mostly rejected
    int32_t spoil_after = -1;        // tests only: draft tokens from this index on are replaced by token 0

    static draft_settings from_request(const json & request, bool engine_default);
};

// One request's drafts, from llama.cpp's n-gram drafters over that request's tokens only.
class drafter {
  public:
    drafter(const draft_settings & settings, const std::vector<llama_token> & prompt);

    // A draft to follow `last` (sampled, not in the cells yet), given the tokens the cells hold: at most
    // n_max tokens, often none (no match, too short, or drafting paused).
    std::vector<llama_token> propose(const std::vector<llama_token> & cells, llama_token last, int32_t n_max);

    // How many tokens of the last proposal the model agreed with.
    void accepted(size_t n);

    int64_t n_drafted = 0;
    int64_t n_accepted = 0;

  private:
    draft_settings settings_;
    common_speculative_ptr spec_;
    size_t n_proposed_ = 0;
    int32_t failures_in_a_row_ = 0;
    int32_t paused_for_ = 0;
};

// ---- One request (generate.cpp) ----------------------------------------------------------------------

// Runs one chat completion (llama_lsp_generate) and returns its result object.
json generate(llama_lsp_engine & e, const json & request, llama_lsp_piece_cb on_piece, void * user_data);

// ---- Cancel (api.cpp) --------------------------------------------------------------------------------

// Ends an abort's quiet period: llama.cpp logs errors while it unwinds a cancelled decode.
struct abort_scope {
    llama_lsp_engine & engine;
    ~abort_scope();
};

}  // namespace llama_lsp
