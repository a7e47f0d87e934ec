// shim.cpp: the engine behind llama_lsp.h.
//
// One model and one context, opened once. Each slot is a llama.cpp sequence with its own KV stream,
// and records exactly the tokens its cells hold. A generate call picks a slot, gives it the longest
// cached prefix of its prompt (its own, a copy of another slot's, or a state saved on disk), evaluates
// only the rest, and commits the new record only on the happy path (cache_guard): any failure leaves
// the slot empty, never out of step with its cells.
//
// Exact reuse. Logits depend on how a prompt is cut into batches, so by default every evaluation is
// cut at fixed absolute positions (multiples of prefill_chunk), reuse stops at the last such boundary
// inside the common prefix, and the KV written while decoding (one token at a time) is dropped after
// the answer. A warm run then computes every position in the same chunk, in the same cells, as a cold
// run would, and a greedy answer cannot depend on what the cache held before.

// The header is plain C without preprocessor lines (it doubles as the cffi declarations).
extern "C" {
#include "llama_lsp.h"
}

#include "chat.h"
#include "common.h"
#include "sampling.h"
#include "llama.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define LLAMA_LSP_API extern "C" __attribute__((visibility("default")))

#ifndef LLAMA_LSP_SOURCE_ID
#define LLAMA_LSP_SOURCE_ID "unknown"
#endif

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

constexpr const char * k_version = "0.1.0";

// An error with a machine-readable type, reported as {"error": {"type", "message"}}.
struct engine_error : std::runtime_error {
    std::string type;
    engine_error(std::string type_, const std::string & message) : std::runtime_error(message), type(std::move(type_)) {}
};

char * dup_string(const std::string & text) {
    char * out = static_cast<char *>(std::malloc(text.size() + 1));
    if (out) {
        std::memcpy(out, text.c_str(), text.size() + 1);
    }
    return out;
}

char * error_json(const std::string & type, const std::string & message) {
    json err = {{"error", {{"type", type}, {"message", message}}}};
    return dup_string(err.dump(-1, ' ', false, json::error_handler_t::replace));
}

// Runs fn and turns every exception into an error object, so none crosses the C boundary.
template <typename Fn> char * guarded(Fn && fn) {
    try {
        json out = fn();
        return dup_string(out.dump(-1, ' ', false, json::error_handler_t::replace));
    } catch (const engine_error & e) {
        return error_json(e.type, e.what());
    } catch (const json::exception & e) {
        return error_json("invalid_request", std::string("invalid JSON: ") + e.what());
    } catch (const std::bad_alloc &) {
        return error_json("out_of_memory", "out of memory");
    } catch (const std::exception & e) {
        return error_json("internal", e.what());
    } catch (...) {
        return error_json("internal", "unknown error");
    }
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

size_t common_prefix(const std::vector<llama_token> & a, const std::vector<llama_token> & b) {
    size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) {
        i++;
    }
    return i;
}

// Length of the longest prefix of text that ends on a whole UTF-8 character.
size_t utf8_complete_prefix(const std::string & text) {
    size_t n = text.size();
    // Look back at most 3 bytes for the lead byte of an unfinished character.
    for (size_t back = 1; back <= std::min<size_t>(3, n); back++) {
        unsigned char c = static_cast<unsigned char>(text[n - back]);
        if ((c & 0xC0) == 0x80) {
            continue;  // continuation byte
        }
        size_t need = (c & 0x80) == 0 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return back < need ? n - back : n;
    }
    return n;
}

// How many trailing bytes of text could be the start of one of the stop strings.
size_t stop_overlap(const std::string & text, const std::vector<std::string> & stops) {
    size_t hold = 0;
    for (const auto & stop : stops) {
        for (size_t len = std::min(stop.size() - 1, text.size()); len > hold; len--) {
            if (text.compare(text.size() - len, len, stop, 0, len) == 0) {
                hold = len;
                break;
            }
        }
    }
    return hold;
}

std::atomic<llama_lsp_log_cb> g_log_cb{nullptr};
std::atomic<void *> g_log_user_data{nullptr};
std::atomic<int> g_aborting{0};  // while > 0, llama.cpp's errors about the abort are expected

__attribute__((format(printf, 1, 2))) void log_warning(const char * format, ...) {
    llama_lsp_log_cb cb = g_log_cb.load();
    if (!cb) return;
    char text[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    cb(g_log_user_data.load(), 3, text);
}

void log_trampoline(ggml_log_level level, const char * text, void * /*unused*/) {
    llama_lsp_log_cb cb = g_log_cb.load();
    if (!cb || !text) {
        return;
    }
    int lvl = level == GGML_LOG_LEVEL_ERROR ? 4 : level == GGML_LOG_LEVEL_WARN ? 3 : level == GGML_LOG_LEVEL_INFO ? 2 : 1;
    if (lvl == 4 && g_aborting.load() > 0) {
        lvl = 1;  // a cancelled decode logs errors that are not errors
    }
    cb(g_log_user_data.load(), lvl, text);
}

// One llama.cpp sequence and the record of what its cells hold.
struct slot {
    llama_seq_id id = 0;
    std::string key;                  // the name requests use to come back to it ("" = none)
    std::vector<llama_token> tokens;  // exactly what the KV cache holds for this sequence
    uint64_t last_used = 0;
};

// A slot saved on disk, loaded only when a request would reuse it.
struct saved_slot {
    std::string key;
    std::string path;
    std::vector<llama_token> tokens;
};

}  // namespace

struct llama_lsp_engine {
    llama_model * model = nullptr;
    llama_context * ctx = nullptr;
    const llama_vocab * vocab = nullptr;
    common_chat_templates_ptr templates;
    std::vector<slot> slots;
    std::vector<saved_slot> saved;
    std::string saved_dir;
    uint64_t clock = 0;
    int32_t prefill_chunk = 64;
    bool exact_reuse = true;
    bool can_trim = true;  // false for recurrent/hybrid memory: every request starts from scratch
    int32_t n_threads = 1;
    int32_t n_threads_batch = 2;
    std::string cache_key;
    std::string model_path;
    std::atomic<bool> cancel_requested{false};
    std::atomic<bool> abort_logged{false};
    std::mutex busy;

    ~llama_lsp_engine() {
        templates.reset();
        if (ctx) llama_free(ctx);
        if (model) llama_model_free(model);
    }

    llama_memory_t memory() const { return llama_get_memory(ctx); }

    std::string fingerprint() const {
        char desc[256] = {0};
        llama_model_desc(model, desc, sizeof(desc));
        return std::string("llama-lsp ") + k_version + "; llama.cpp " + LLAMA_LSP_SOURCE_ID + "; " + desc + "; params " +
               std::to_string(llama_model_n_params(model)) + "; size " + std::to_string(llama_model_size(model)) +
               "; key " + cache_key;
    }

    void clear_slot(slot & s) {
        llama_memory_seq_rm(memory(), s.id, -1, -1);
        s.tokens.clear();
    }

    // Keeps the first n tokens of the slot; clears it if the memory cannot be trimmed exactly.
    void trim_slot(slot & s, size_t n) {
        if (n >= s.tokens.size()) {
            return;
        }
        if (n == 0 || !can_trim || !llama_memory_seq_rm(memory(), s.id, (llama_pos) n, -1) ||
            llama_memory_seq_pos_max(memory(), s.id) != (llama_pos) n - 1) {
            clear_slot(s);
            return;
        }
        s.tokens.resize(n);
    }

    // The number of cached tokens a prompt may keep, given its common prefix with the cache.
    size_t reusable(size_t n_common, size_t n_prompt) const {
        if (!can_trim || n_prompt == 0) {
            return 0;
        }
        size_t keep = std::min(n_common, n_prompt - 1);  // always evaluate at least one token
        if (exact_reuse) {
            keep -= keep % (size_t) prefill_chunk;
        }
        return keep;
    }
};

namespace {

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

// Ends an abort's quiet period: llama.cpp logs errors while it unwinds a cancelled decode.
struct abort_scope {
    llama_lsp_engine & engine;
    ~abort_scope() {
        if (engine.abort_logged.exchange(false)) {
            g_aborting--;
        }
    }
};

bool abort_callback(void * data) {
    auto * engine = static_cast<llama_lsp_engine *>(data);
    if (!engine->cancel_requested.load(std::memory_order_relaxed)) {
        return false;
    }
    if (!engine->abort_logged.exchange(true)) {
        g_aborting++;  // the errors llama.cpp logs next are the abort's, not real ones
    }
    return true;
}

json parse_object(const char * text, const char * what) {
    if (!text) {
        throw engine_error("invalid_request", std::string(what) + " is NULL");
    }
    json value = json::parse(text, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        throw engine_error("invalid_request", std::string(what) + " is not a JSON object");
    }
    return value;
}

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
};

common_chat_tool_choice parse_tool_choice(const json & request) {
    std::string choice = get_or<std::string>(request, "tool_choice", "auto");
    if (choice == "auto") return COMMON_CHAT_TOOL_CHOICE_AUTO;
    if (choice == "required") return COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    if (choice == "none") return COMMON_CHAT_TOOL_CHOICE_NONE;
    throw engine_error("invalid_request", "tool_choice must be auto, required or none");
}

// The literal a model writes to open a tool call, taken from the template's own grammar triggers.
std::string tool_call_opener(const common_chat_params & chat) {
    for (const auto & trigger : chat.grammar_triggers) {
        if (trigger.type == COMMON_GRAMMAR_TRIGGER_TYPE_WORD && !trigger.value.empty()) {
            return trigger.value;
        }
    }
    return "";
}

void restrict_tools(llama_lsp_engine & e, common_chat_templates_inputs & inputs, const json & allowed,
                    prepared_prompt & p) {
    if (!allowed.is_array() || allowed.empty()) {
        throw engine_error("invalid_request", "allowed_tools must be a non-empty array of tool names");
    }
    std::vector<common_chat_tool> kept;
    for (const auto & name : allowed) {
        if (!name.is_string()) throw engine_error("invalid_request", "allowed_tools must hold tool names");
        auto it = std::find_if(inputs.tools.begin(), inputs.tools.end(),
                               [&](const common_chat_tool & t) { return t.name == name.get<std::string>(); });
        if (it == inputs.tools.end()) {
            throw engine_error("invalid_request", "allowed tool '" + name.get<std::string>() + "' is not declared");
        }
        kept.push_back(*it);
    }
    inputs.tools = kept;
    common_chat_params subset = common_chat_templates_apply(e.templates.get(), inputs);
    p.chat.grammar = subset.grammar;
    p.chat.grammar_lazy = subset.grammar_lazy;
    p.chat.grammar_triggers = subset.grammar_triggers;
    p.chat.preserved_tokens = subset.preserved_tokens;
    p.chat.parser = subset.parser;
}

prepared_prompt prepare(llama_lsp_engine & e, const json & request) {
    prepared_prompt p;
    if (request.contains("prompt")) {
        if (!request["prompt"].is_string()) {
            throw engine_error("invalid_request", "prompt must be a string");
        }
        p.text = request["prompt"].get<std::string>();
    } else {
        if (!request.contains("messages") || !request["messages"].is_array() || request["messages"].empty()) {
            throw engine_error("invalid_request", "messages must be a non-empty array (or give a raw prompt)");
        }
        common_chat_templates_inputs inputs;
        try {
            inputs.messages = common_chat_msgs_parse_oaicompat(common_json::parse(request["messages"].dump()));
            if (request.contains("tools") && request["tools"].is_array() && !request["tools"].empty()) {
                inputs.tools = common_chat_tools_parse_oaicompat(common_json::parse(request["tools"].dump()));
            }
        } catch (const std::exception & ex) {
            throw engine_error("invalid_request", std::string("bad messages or tools: ") + ex.what());
        }
        inputs.tool_choice = parse_tool_choice(request);
        inputs.parallel_tool_calls = get_or<bool>(request, "parallel_tool_calls", false);
        inputs.add_generation_prompt = true;
        inputs.use_jinja = true;
        inputs.enable_thinking = false;
        if (inputs.tools.empty()) {
            inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_NONE;
        }
        try {
            p.chat = common_chat_templates_apply(e.templates.get(), inputs);
        } catch (const std::exception & ex) {
            throw engine_error("invalid_request", std::string("chat template failed: ") + ex.what());
        }
        p.is_chat = true;
        p.has_tools = !inputs.tools.empty() && inputs.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE;
        p.text = p.chat.prompt;
        if (p.has_tools && request.contains("allowed_tools")) {
            // The prompt declares every tool (so its prefix stays the same from request to request);
            // the grammar and the parser come from a rendering with only the allowed ones.
            restrict_tools(e, inputs, request["allowed_tools"], p);
        }
        for (const auto & tool : inputs.tools) {
            p.tool_names.push_back(tool.name);
        }
        // Small models rarely open a call on their own even when one is required: write the opener
        // for them, so the grammar takes over from the first generated token.
        if (inputs.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED) {
            // The required-mode grammar has no trigger; the auto-mode rendering names the opener.
            common_chat_templates_inputs auto_inputs = inputs;
            auto_inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
            p.forced_prefix = tool_call_opener(common_chat_templates_apply(e.templates.get(), auto_inputs));
            if (!p.forced_prefix.empty()) {
                p.text += p.forced_prefix;
                p.chat.generation_prompt += p.forced_prefix;
            }
        }
    }
    if (p.is_chat) {
        p.parse_params = common_chat_parser_params(p.chat);
        p.parse_params.parse_tool_calls = p.has_tools;
        try {
            if (!p.chat.parser.empty()) p.parse_params.parser.load(p.chat.parser);
        } catch (const std::exception & ex) {
            log_warning("llama-lsp: the template's parser did not load (%s); answers stay plain content\n", ex.what());
            p.parse_params.parser = common_peg_arena();
        }
    }
    p.tokens = common_tokenize(e.vocab, p.text, /*add_special=*/true, /*parse_special=*/true);
    if (p.tokens.empty()) {
        throw engine_error("invalid_request", "the prompt is empty");
    }
    return p;
}

common_params_sampling sampling_params(llama_lsp_engine & e, const json & request, const prepared_prompt & p) {
    common_params_sampling sp;
    sp.temp = get_or<float>(request, "temperature", 0.0f);
    sp.top_k = get_or<int32_t>(request, "top_k", 40);
    sp.top_p = get_or<float>(request, "top_p", 0.95f);
    sp.seed = get_or<uint32_t>(request, "seed", 0);
    sp.no_perf = true;
    if (p.has_tools && !p.chat.grammar.empty()) {
        sp.grammar = common_grammar(COMMON_GRAMMAR_TYPE_TOOL_CALLS, p.chat.grammar);
        sp.grammar_lazy = p.chat.grammar_lazy && p.forced_prefix.empty();
        sp.generation_prompt = p.chat.generation_prompt;
        for (const auto & text : p.chat.preserved_tokens) {
            auto ids = common_tokenize(e.vocab, text, false, true);
            if (ids.size() == 1) {
                sp.preserved_tokens.insert(ids[0]);
            }
        }
        // Same conversion as llama-server: a trigger word that is one preserved token becomes a token trigger.
        for (const auto & trigger : p.chat.grammar_triggers) {
            if (trigger.type == COMMON_GRAMMAR_TRIGGER_TYPE_WORD) {
                auto ids = common_tokenize(e.vocab, trigger.value, false, true);
                if (ids.size() == 1 && sp.preserved_tokens.count(ids[0])) {
                    common_grammar_trigger t;
                    t.type = COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN;
                    t.value = trigger.value;
                    t.token = ids[0];
                    sp.grammar_triggers.push_back(t);
                    continue;
                }
            }
            sp.grammar_triggers.push_back(trigger);
        }
        if (sp.grammar_lazy && sp.grammar_triggers.empty()) {
            sp.grammar_lazy = false;
        }
    }
    return sp;
}

// Picks the slot for a request: the one named for it, else (for unnamed requests) the one holding the
// longest common prefix, else a free or least-recently-used one.
slot & pick_slot(llama_lsp_engine & e, const std::string & key, const std::vector<llama_token> & prompt) {
    if (!key.empty()) {
        for (auto & s : e.slots) {
            if (s.key == key) return s;
        }
    } else {
        slot * best = nullptr;
        size_t best_common = 0;
        for (auto & s : e.slots) {
            size_t n = common_prefix(s.tokens, prompt);
            if (n > best_common) {
                best = &s;
                best_common = n;
            }
        }
        if (best && best->key.empty()) return *best;
    }
    slot * victim = &e.slots[0];
    for (auto & s : e.slots) {
        if (s.tokens.empty() && s.key.empty()) return s;
        if (s.last_used < victim->last_used) victim = &s;
    }
    return *victim;
}

// ---- Saved state -----------------------------------------------------------------------------------
// Whoever can write to the state directory controls index.json and the state files, so nothing in them
// is trusted: a file is looked up only by a name of ours inside the directory, only a regular file of a
// bounded size is opened, and a loaded state must hold exactly the tokens its index entry lists.

std::string state_file_name(llama_seq_id id) { return "slot-" + std::to_string(id) + ".bin"; }

// The names save_slots gives state files. Anything else (a path, "..", a separator) is refused, so an
// index can never make us read or delete a file outside the state directory.
bool is_state_file_name(const std::string & name) {
    static const std::regex pattern("(slot|saved)-[0-9]{1,9}\\.bin");
    return std::regex_match(name, pattern);
}

// The names of everything save_slots may leave in a state directory, temporary files included: the
// only files it ever deletes there.
bool is_own_file_name(const std::string & name) {
    static const std::regex pattern("(index\\.json|(slot|saved)-[0-9]{1,9}\\.bin)(\\.tmp)?");
    return std::regex_match(name, pattern);
}

// Slots saved and never loaded again are kept for a while, not forever: each can be as large as a full
// slot's cells.
size_t max_saved_slots(const llama_lsp_engine & e) { return 2 * e.slots.size(); }

// A generous bound on one state file: a full slot's tokens and cells, each cell holding a key and a
// value row of n_embd floats per layer (an f16 cache with grouped-query heads needs several times
// less). It stops absurd files before llama.cpp opens them; a genuine one always fits.
uintmax_t max_state_file_size(const llama_lsp_engine & e) {
    uintmax_t row = (uintmax_t) llama_model_n_embd(e.model) * sizeof(float);
    uintmax_t per_cell = sizeof(llama_token) + 64 + 2 * row * (uintmax_t) llama_model_n_layer(e.model);
    return (1u << 20) + per_cell * llama_n_ctx_seq(e.ctx);
}

// A generous bound on index.json: every kept slot full, each token written in up to 12 characters.
uintmax_t max_index_size(const llama_lsp_engine & e) {
    return (1u << 20) + max_saved_slots(e) * ((uintmax_t) llama_n_ctx_seq(e.ctx) * 12 + 65536);
}

// Why the file at path must not be opened, or "" if it may. Only regular files: opening a FIFO blocks
// forever and a device may never end. Symlinks are refused as well: save_slots never writes one, and
// following it would read a file outside the state directory.
std::string refuse_file(const fs::path & path, uintmax_t max_size) {
    std::error_code ec;
    fs::file_status status = fs::symlink_status(path, ec);
    if (!fs::exists(status)) return "it does not exist";
    if (!fs::is_regular_file(status)) return "it is not a regular file";
    uintmax_t size = fs::file_size(path, ec);
    if (ec || size > max_size) return "it is larger than " + std::to_string(max_size) + " bytes";
    return "";
}

// The tokens an index entry lists, if every one is a token of this model and a slot can hold them all.
std::optional<std::vector<llama_token>> saved_tokens(const llama_lsp_engine & e, const json & value) {
    if (!value.is_array() || value.empty() || value.size() > llama_n_ctx_seq(e.ctx)) return std::nullopt;
    const int64_t n_vocab = llama_vocab_n_tokens(e.vocab);
    std::vector<llama_token> tokens;
    tokens.reserve(value.size());
    for (const auto & token : value) {
        if (!token.is_number_integer()) return std::nullopt;
        int64_t id = token.get<int64_t>();
        if (id < 0 || id >= n_vocab) return std::nullopt;
        tokens.push_back((llama_token) id);
    }
    return tokens;
}

// Adds one index entry to the slots known on disk. Returns why it was refused, or "".
std::string add_saved_slot(llama_lsp_engine & e, const fs::path & dir, const json & entry) {
    if (!entry.is_object()) return "an entry is not an object";
    auto key = entry.find("key");
    auto file = entry.find("file");
    auto listed = entry.find("tokens");
    if (file == entry.end() || !file->is_string() || !is_state_file_name(file->get<std::string>())) {
        return "not the name of a state file: " + (file == entry.end() ? std::string("none") : file->dump());
    }
    std::string name = file->get<std::string>();
    if (key == entry.end() || !key->is_string()) return name + ": its key is not a string";
    for (const auto & known : e.saved) {
        if (fs::path(known.path).filename() == name) return name + ": listed twice";
    }
    auto tokens = listed == entry.end() ? std::nullopt : saved_tokens(e, *listed);
    if (!tokens) return name + ": its tokens are not this model's, or more than a slot holds";
    fs::path path = dir / name;
    std::string why = refuse_file(path, max_state_file_size(e));
    if (!why.empty()) return name + ": " + why;
    e.saved.push_back({key->get<std::string>(), path.string(), std::move(*tokens)});
    return "";
}

// Loads a saved slot into target, an empty slot. The file may have changed since its index was read,
// so it is checked again, and the cells must hold exactly the listed tokens, at positions 0..n-1.
// On failure the file is deleted and the slot left empty (perhaps every slot: see below).
bool load_saved_slot(llama_lsp_engine & e, slot & target, const saved_slot & saved) {
    std::string why = refuse_file(saved.path, max_state_file_size(e));
    const bool opened = why.empty();
    std::vector<llama_token> tokens(saved.tokens.size() + 1);  // room for one more: a longer file shows
    if (opened) {
        size_t n_tokens = 0;
        size_t n_read = llama_state_seq_load_file(e.ctx, saved.path.c_str(), target.id, tokens.data(),
                                                  tokens.size(), &n_tokens);
        tokens.resize(n_read ? n_tokens : 0);
        std::error_code ec;
        if (n_read == 0) {
            why = "llama.cpp could not load it";
        } else if (tokens != saved.tokens) {
            why = "its tokens differ from the index";
        } else if (n_read != fs::file_size(saved.path, ec)) {
            why = "it has data after the state";
        } else if (llama_memory_seq_pos_min(e.memory(), target.id) != 0 ||
                   llama_memory_seq_pos_max(e.memory(), target.id) != (llama_pos) tokens.size() - 1) {
            why = "its cells are not at its tokens' positions";
        }
    }
    if (!why.empty()) {
        log_warning("llama-lsp: ignoring saved slot state %s: %s\n", saved.path.c_str(), why.c_str());
        if (opened) {
            // The file may have put cells at negative positions or at INT32_MAX, even if llama.cpp then
            // failed. seq_rm removes only [0, INT32_MAX), and a stray cell would break or skew every later
            // request on this slot: clearing the whole memory is the one sure way to remove it.
            llama_memory_clear(e.memory(), true);
            for (auto & s : e.slots) s.tokens.clear();
        }
        e.clear_slot(target);
        std::error_code ignored;
        fs::remove(saved.path, ignored);
        return false;
    }
    target.tokens = std::move(tokens);
    return true;
}

// Gives the target slot the longest available prefix of the prompt: its own, a fork of another slot's
// cells (zero-copy in a unified cache), or a saved state from disk.
void share_prefix(llama_lsp_engine & e, slot & target, const std::vector<llama_token> & prompt) {
    size_t own = common_prefix(target.tokens, prompt);
    if (!e.can_trim) {
        return;
    }
    slot * donor = nullptr;
    size_t donor_common = own;
    for (auto & s : e.slots) {
        if (&s == &target) continue;
        size_t n = common_prefix(s.tokens, prompt);
        if (n > donor_common) {
            donor = &s;
            donor_common = n;
        }
    }
    const saved_slot * from_disk = nullptr;
    size_t disk_common = std::max(own, donor_common);
    for (const auto & saved : e.saved) {
        size_t n = common_prefix(saved.tokens, prompt);
        bool named_for_it = !target.key.empty() && saved.key == target.key && own == 0;
        if (n > disk_common || (named_for_it && n > 0 && n >= disk_common)) {
            from_disk = &saved;
            disk_common = n;
        }
    }
    if (from_disk && e.reusable(disk_common, prompt.size()) > e.reusable(std::max(own, donor_common), prompt.size())) {
        saved_slot saved = *from_disk;
        e.saved.erase(e.saved.begin() + (from_disk - e.saved.data()));  // a file that fails once fails again
        e.clear_slot(target);
        load_saved_slot(e, target, saved);  // on failure the prompt is evaluated cold
        return;
    }
    if (donor && e.reusable(donor_common, prompt.size()) > e.reusable(own, prompt.size())) {
        // Slots live in separate streams, so the copy is of the donor's whole stream (a memcpy at
        // the next decode), then trimmed to the shared prefix.
        e.clear_slot(target);
        llama_memory_seq_cp(e.memory(), donor->id, target.id, -1, -1);
        target.tokens = donor->tokens;
        e.trim_slot(target, donor_common);
    }
}

void add_to_batch(llama_batch & batch, llama_token token, llama_pos pos, llama_seq_id seq, bool logits) {
    batch.token[batch.n_tokens] = token;
    batch.pos[batch.n_tokens] = pos;
    batch.n_seq_id[batch.n_tokens] = 1;
    batch.seq_id[batch.n_tokens][0] = seq;
    batch.logits[batch.n_tokens] = logits;
    batch.n_tokens++;
}

struct batch_holder {
    llama_batch batch;
    explicit batch_holder(int32_t n) : batch(llama_batch_init(n, 0, 1)) {}
    ~batch_holder() { llama_batch_free(batch); }
};

// Accepts a fenced or bare {"name": ..., "arguments": {...}} that names a declared tool as a call:
// small models often write calls this way instead of the template's markup.
bool extract_json_call(const std::string & text, const std::vector<std::string> & tool_names,
                       common_chat_tool_call & call, std::string & rest) {
    size_t start = text.find('{');
    while (start != std::string::npos) {
        // try every closing brace from the last one backwards, so the outermost object wins
        for (size_t end = text.rfind('}'); end != std::string::npos && end > start; end = text.rfind('}', end - 1)) {
            json value = json::parse(text.substr(start, end - start + 1), nullptr, false);
            if (value.is_discarded() || !value.is_object()) continue;
            if (!value.contains("name") || !value["name"].is_string()) break;
            std::string name = value["name"].get<std::string>();
            if (std::find(tool_names.begin(), tool_names.end(), name) == tool_names.end()) break;
            json args = value.contains("arguments") ? value["arguments"] : value.value("parameters", json::object());
            if (args.is_string()) {
                args = json::parse(args.get<std::string>(), nullptr, false);
            }
            if (!args.is_object()) break;
            call.name = name;
            call.arguments = args.dump();
            size_t cut_start = start, cut_end = end + 1;
            size_t fence = text.rfind("```", start);
            if (fence != std::string::npos && text.find_first_not_of(" \t\r\njsonJSON", fence + 3) >= start) {
                size_t close = text.find("```", end);
                if (close != std::string::npos) {
                    cut_start = fence;
                    cut_end = close + 3;
                }
            }
            rest = text.substr(0, cut_start) + text.substr(cut_end);
            return true;
        }
        start = text.find('{', start + 1);
    }
    return false;
}

json tool_calls_json(const std::vector<common_chat_tool_call> & calls) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); i++) {
        json args = json::parse(calls[i].arguments, nullptr, false);
        if (args.is_discarded()) {
            args = calls[i].arguments;  // keep what the model wrote; the caller reports it
        }
        out.push_back({{"id", calls[i].id.empty() ? "call_" + std::to_string(i) : calls[i].id},
                       {"name", calls[i].name},
                       {"arguments", args}});
    }
    return out;
}

std::string trim(const std::string & s) {
    size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos) return "";
    size_t b = s.find_last_not_of(" \t\r\n");
    return s.substr(a, b - a + 1);
}

// Splits the raw answer into content and tool calls with the template's own parser.
void parse_answer(const prepared_prompt & p, const json & request, const std::string & raw, json & result) {
    common_chat_msg msg;
    msg.content = raw;
    if (p.is_chat) {
        try {
            msg = common_chat_parse(raw, /*is_partial=*/false, p.parse_params);
        } catch (const std::exception & ex) {
            log_warning("llama-lsp: could not parse the answer (%s); returning it as content\n", ex.what());
            msg = common_chat_msg();
            msg.content = raw;
        }
    }
    std::string content = msg.content;
    auto calls = msg.tool_calls;
    if (p.has_tools && calls.empty()) {
        common_chat_tool_call call;
        std::string rest;
        if (extract_json_call(content, p.tool_names, call, rest)) {
            calls.push_back(call);
            content = trim(rest);
        }
    }
    if (!get_or<bool>(request, "parallel_tool_calls", false) && calls.size() > 1) {
        calls.resize(1);
    }
    result["content"] = p.has_tools ? trim(content) : content;  // what the streamer sends is trimmed too
    result["tool_calls"] = tool_calls_json(calls);
}

// Whether a JSON tool call naming a declared tool may start at `at` ("{" or a "```" fence before one):
// true while what follows is still consistent with `{"name": "<declared tool>"`.
bool may_start_json_call(const std::string & text, size_t at, const std::vector<std::string> & tool_names) {
    auto skip_space = [&](size_t i) { return std::min(text.find_first_not_of(" \t\r\n", i), text.size()); };
    size_t i = at;
    if (text.compare(i, 3, "```") == 0 || (text.size() - i < 3 && std::string("```").compare(0, text.size() - i, text, i) == 0)) {
        i = std::min(text.find_first_not_of("`", i), text.size());
        i = std::min(text.find_first_not_of("jsonJSON", i), text.size());
        i = skip_space(i);
    }
    // Matches `literal` at i; a text that ends inside it may still become a call.
    auto expect = [&](const std::string & literal, bool & open) {
        size_t n = std::min(literal.size(), text.size() - i);
        if (text.compare(i, n, literal, 0, n) != 0) return false;
        open = n < literal.size();
        i += n;
        return true;
    };
    bool open = false;
    for (const char * literal : {"{", "\"name\"", ":", "\""}) {
        i = skip_space(i);
        if (i == text.size()) return true;
        if (!expect(literal, open)) return false;
        if (open) return true;
    }
    size_t close = text.find('"', i);
    std::string name = text.substr(i, close == std::string::npos ? std::string::npos : close - i);
    for (const auto & tool : tool_names) {
        if (close == std::string::npos ? tool.compare(0, name.size(), name) == 0 : tool == name) return true;
    }
    return false;
}

// Where a tool call may begin in the answer so far: the template's opener (also when the text ends
// with part of it), or a JSON call that parse_answer would take out of the content.
size_t tool_call_start(const std::string & raw, const std::vector<std::string> & openers,
                       const std::vector<std::string> & tool_names) {
    size_t start = raw.size() - stop_overlap(raw, openers);
    for (const auto & opener : openers) {
        start = std::min(start, raw.find(opener));
    }
    for (size_t at = raw.find_first_of("{`"); at < start; at = raw.find_first_of("{`", at + 1)) {
        if (may_start_json_call(raw, at, tool_names)) return at;
    }
    return start;
}

// Sends streamed text: whole UTF-8 characters only, and never the start of a possible stop string.
// With tools, only text before anything that may become a tool call is sent, without its trailing
// whitespace, so that the pieces always add up to the parsed answer's content.
class piece_streamer {
  public:
    piece_streamer(llama_lsp_piece_cb cb, void * user_data, std::vector<std::string> stops, const prepared_prompt & p)
        : cb_(cb), user_data_(user_data), stops_(std::move(stops)), with_tools_(p.has_tools), prompt_(p) {
        std::string opener = tool_call_opener(p.chat);
        if (!opener.empty()) openers_.push_back(opener);
    }

    // Returns false when the receiver asks to stop. The final update passes the parsed content.
    bool update(const std::string & raw, const std::string * final_content = nullptr) {
        if (!cb_) return true;
        std::string visible;
        size_t limit;
        if (final_content) {
            visible = *final_content;
            limit = visible.size();
        } else {
            // With tools the parsed content is trimmed, so leading whitespace is never sent.
            visible = with_tools_ ? raw.substr(std::min(raw.find_first_not_of(" \t\r\n"), raw.size())) : raw;
            limit = visible.size() - stop_overlap(visible, stops_);
            if (with_tools_) {
                limit = std::min(limit, tool_call_start(visible, openers_, prompt_.tool_names));
                if (limit > 0) limit = visible.find_last_not_of(" \t\r\n", limit - 1) + 1;  // npos + 1 == 0
            }
        }
        limit = utf8_complete_prefix(visible.substr(0, limit));
        if (visible.compare(0, sent_, sent_text_) != 0) {
            if (final_content) log_warning("llama-lsp: the streamed text is not a prefix of the parsed answer\n");
            return true;
        }
        if (limit <= sent_) return true;  // nothing new
        std::string piece = visible.substr(sent_, limit - sent_);
        sent_text_ += piece;
        sent_ = limit;
        return cb_(user_data_, piece.data(), (int) piece.size()) == 0;
    }

  private:
    llama_lsp_piece_cb cb_;
    void * user_data_;
    std::vector<std::string> stops_;
    std::vector<std::string> openers_;
    bool with_tools_;
    const prepared_prompt & prompt_;
    size_t sent_ = 0;
    std::string sent_text_;
};

json generate(llama_lsp_engine & e, const json & request, llama_lsp_piece_cb on_piece, void * user_data) {
    using clock = std::chrono::steady_clock;
    const auto t_start = clock::now();
    // Not reset here: a cancel that arrives just before this call starts is meant for it. The call
    // consumes the cancel when it ends, however it ends.
    struct forget_cancel {
        std::atomic<bool> & flag;
        ~forget_cancel() { flag.store(false); }
    } forget{e.cancel_requested};

    prepared_prompt p = prepare(e, request);
    const size_t n_ctx = llama_n_ctx_seq(e.ctx);
    const size_t n_prompt = p.tokens.size();
    if (n_prompt >= n_ctx) {
        throw engine_error("context_overflow", "the prompt has " + std::to_string(n_prompt) +
                                                   " tokens but the context holds " + std::to_string(n_ctx) +
                                                   "; shorten the input or raise the context size");
    }
    int32_t max_tokens = get_or<int32_t>(request, "max_tokens", 512);
    if (max_tokens <= 0) {
        throw engine_error("invalid_request", "max_tokens must be positive");
    }
    max_tokens = (int32_t) std::min<size_t>((size_t) max_tokens, n_ctx - n_prompt);
    std::vector<std::string> stops = p.chat.additional_stops;
    if (request.contains("stop")) {
        for (const auto & s : request["stop"]) {
            if (!s.is_string()) throw engine_error("invalid_request", "stop must be a list of strings");
            if (!s.get<std::string>().empty()) stops.push_back(s.get<std::string>());
        }
    }
    common_params_sampling sp = sampling_params(e, request, p);
    struct sampler_deleter {
        void operator()(common_sampler * s) const { common_sampler_free(s); }
    };
    std::unique_ptr<common_sampler, sampler_deleter> sampler(common_sampler_init(e.model, sp));
    if (!sampler) {
        throw engine_error("invalid_request", "could not build the sampler (bad grammar?)");
    }
    const int fail_after_chunks = get_or<int>(request, "debug_fail_prefill_after_chunks", -1);

    // Match: pick a slot, give it the best cached prefix, drop the rest of what it held.
    std::string key = get_or<std::string>(request, "slot", "");
    slot & s = pick_slot(e, key, p.tokens);
    s.key = key;
    s.last_used = ++e.clock;
    share_prefix(e, s, p.tokens);
    const size_t n_common = common_prefix(s.tokens, p.tokens);
    const size_t n_keep = e.reusable(n_common, n_prompt);
    e.trim_slot(s, n_keep);
    const size_t n_reused = s.tokens.size();  // trimming may have had to clear the slot
    const double t_match_ms = ms_since(t_start);

    cache_guard guard(e, s);
    abort_scope aborting{e};
    json result;
    std::string finish_reason = "stop";
    std::string error_message;

    // Prefill: evaluate the rest of the prompt in chunks cut at fixed absolute positions.
    const auto t_prefill_start = clock::now();
    const int32_t chunk = e.exact_reuse ? e.prefill_chunk : (int32_t) llama_n_batch(e.ctx);
    batch_holder holder(std::max<int32_t>(chunk, 1));
    llama_batch & batch = holder.batch;
    size_t pos = n_reused;
    int chunks_done = 0;
    while (pos < n_prompt) {
        size_t end = std::min(n_prompt, (pos / (size_t) chunk + 1) * (size_t) chunk);
        batch.n_tokens = 0;
        for (size_t i = pos; i < end; i++) {
            add_to_batch(batch, p.tokens[i], (llama_pos) i, s.id, i == n_prompt - 1);
        }
        int rc = llama_decode(e.ctx, batch);
        if (rc == 0 && fail_after_chunks >= 0 && chunks_done == fail_after_chunks) {
            rc = -1;  // a fault injected by the tests: the chunk went into the cache, the call "failed"
        }
        if (rc != 0) {
            if (rc == 2 || e.cancel_requested.load()) {
                finish_reason = "cancelled";
                break;
            }
            throw engine_error("decode_failed", "llama_decode failed with code " + std::to_string(rc) +
                                                    " while reading the prompt");
        }
        chunks_done++;
        pos = end;
        if (e.cancel_requested.load()) {
            finish_reason = "cancelled";
            break;
        }
    }
    const double t_prefill_ms = ms_since(t_prefill_start);
    if (finish_reason == "stop") {
        s.tokens = p.tokens;  // the cells now hold the whole prompt
    }

    // Decode: sample, stream, feed back.
    std::string raw;
    std::vector<llama_token> generated;
    double t_first_token_ms = 0.0;
    const auto t_decode_start = clock::now();
    piece_streamer streamer(on_piece, user_data, stops, p);
    while (finish_reason == "stop") {
        llama_token token = common_sampler_sample(sampler.get(), e.ctx, -1);
        if (generated.empty()) {
            t_first_token_ms = ms_since(t_start);
        }
        if (llama_vocab_is_eog(e.vocab, token)) {
            break;
        }
        common_sampler_accept(sampler.get(), token, true);
        generated.push_back(token);
        raw += common_token_to_piece(e.ctx, token, false);
        bool stopped = false;
        for (const auto & stop : stops) {
            size_t at = raw.find(stop);
            if (at != std::string::npos) {
                raw.resize(at);
                stopped = true;
            }
        }
        if (stopped) break;
        if (!streamer.update(raw)) {
            finish_reason = "cancelled";
            break;
        }
        if ((int32_t) generated.size() >= max_tokens) {
            finish_reason = "length";
            break;
        }
        if (e.cancel_requested.load()) {
            finish_reason = "cancelled";
            break;
        }
        batch.n_tokens = 0;
        add_to_batch(batch, token, (llama_pos) s.tokens.size(), s.id, true);
        int rc = llama_decode(e.ctx, batch);
        if (rc != 0) {
            if (rc == 2 || e.cancel_requested.load()) {
                finish_reason = "cancelled";
            } else {
                finish_reason = "error";
                error_message = "llama_decode failed with code " + std::to_string(rc) + " while answering";
            }
            break;
        }
        s.tokens.push_back(token);
    }
    const double t_decode_ms = generated.empty() ? 0.0 : ms_since(t_decode_start);

    parse_answer(p, request, raw, result);
    if (finish_reason == "stop" || finish_reason == "length") {
        streamer.update(raw, &result["content"].get_ref<const std::string &>());
    }
    if (finish_reason == "stop" && !result["tool_calls"].empty()) {
        finish_reason = "tool_calls";
    }
    result["finish_reason"] = finish_reason;
    if (!error_message.empty()) {
        result["error_message"] = error_message;
    }
    result["tokens"] = generated;
    result["stats"] = {
        {"n_prompt", n_prompt},           {"n_common", n_common},
        {"n_reused", n_reused},           {"n_evaluated", pos - n_reused},
        {"n_generated", generated.size()}, {"t_match_ms", t_match_ms},
        {"t_prefill_ms", t_prefill_ms},   {"t_first_token_ms", t_first_token_ms},
        {"t_decode_ms", t_decode_ms},     {"slot", s.id},
    };

    // Commit only what the cells now hold and a later request may safely keep.
    if (finish_reason == "stop" || finish_reason == "length" || finish_reason == "tool_calls") {
        if (e.exact_reuse) {
            e.trim_slot(s, n_prompt);  // KV written one token at a time differs from a prompt evaluation
        }
        guard.commit();
    } else if (finish_reason == "cancelled" && pos >= n_prompt) {
        // cancelled while answering: the prompt's cells are complete and safe to keep
        e.trim_slot(s, n_prompt);
        guard.commit();
    }
    return result;
}

// Deletes the files save_slots may have left in dir that keep does not name, and nothing else.
void remove_own_files(const fs::path & dir, const std::set<std::string> & keep = {}) {
    std::error_code ec;
    std::vector<fs::path> doomed;
    for (const auto & item : fs::directory_iterator(dir, ec)) {
        std::string name = item.path().filename().string();
        if (is_own_file_name(name) && keep.count(name) == 0) doomed.push_back(item.path());
    }
    for (const auto & path : doomed) fs::remove(path, ec);
}

// Writes path through a temporary file and a rename, so a reader never sees half a file. A failed write
// (a full disk often shows only when the file is closed) removes the temporary file and throws.
void write_file_atomic(const fs::path & path, const std::string & data) {
    fs::path tmp = path;
    tmp += ".tmp";
    std::error_code ec;
    fs::remove(tmp, ec);  // whatever sits under that name (a symlink, a FIFO) must not receive the data
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << data;
    out.close();
    int error = errno;
    if (out) {
        fs::rename(tmp, path, ec);
    }
    if (!out || ec) {
        std::string why = ec ? ec.message() : error ? std::strerror(error) : "write failed";
        fs::remove(tmp, ec);
        throw engine_error("io", "could not write " + path.string() + ": " + why);
    }
}

// Writes one slot's state to path through a temporary file. llama.cpp closes the file without checking,
// so a full disk could cut it short unnoticed: the size on disk must be the size it wrote.
void write_state_file(llama_lsp_engine & e, const slot & s, const fs::path & path) {
    fs::path tmp = path;
    tmp += ".tmp";
    std::error_code ec;
    fs::remove(tmp, ec);  // whatever sits under that name (a symlink, a FIFO) must not receive the state
    size_t n_written = llama_state_seq_save_file(e.ctx, tmp.c_str(), s.id, s.tokens.data(), s.tokens.size());
    uintmax_t n_on_disk = n_written ? fs::file_size(tmp, ec) : 0;
    std::string why;
    if (n_written == 0) {
        why = "llama.cpp could not write it (its log says why)";
    } else if (n_on_disk != n_written) {
        why = "only " + std::to_string(ec ? 0 : n_on_disk) + " of " + std::to_string(n_written) +
              " bytes reached the disk (is it full?)";
    } else {
        fs::rename(tmp, path, ec);
        if (ec) why = ec.message();
    }
    if (!why.empty()) {
        fs::remove(tmp, ec);
        throw engine_error("io", "could not save slot " + std::to_string(s.id) + " to " + path.string() + ": " + why);
    }
}

json save_slots(llama_lsp_engine & e, const std::string & directory) {
    fs::path dir(directory);
    fs::create_directories(dir);
    std::error_code ec;
    // Slots known on disk but never loaded this session stay valid, in the directory they were read from.
    if (e.saved_dir.empty() || !fs::equivalent(dir, e.saved_dir, ec)) {
        e.saved.clear();
    }
    std::vector<const slot *> live;
    for (const auto & s : e.slots) {
        if (!s.tokens.empty()) live.push_back(&s);
    }
    size_t n_kept = max_saved_slots(e) - std::min(live.size(), max_saved_slots(e));
    if (e.saved.size() > n_kept) e.saved.resize(n_kept);  // the index lists the newest first

    // A kept file under the name a live slot is about to take moves out of its way first.
    std::set<std::string> live_names, taken;
    for (const slot * s : live) live_names.insert(state_file_name(s->id));
    taken = live_names;
    for (const auto & saved : e.saved) taken.insert(fs::path(saved.path).filename().string());
    for (auto & saved : e.saved) {
        if (live_names.count(fs::path(saved.path).filename().string()) == 0) continue;
        int n = 0;
        while (taken.count("saved-" + std::to_string(n) + ".bin") > 0) n++;
        std::string name = "saved-" + std::to_string(n) + ".bin";
        taken.insert(name);
        fs::rename(saved.path, dir / name, ec);
        saved.path = ec ? "" : (dir / name).string();
    }
    auto gone = [&](const saved_slot & saved) {
        return saved.path.empty() || !refuse_file(saved.path, max_state_file_size(e)).empty();
    };
    e.saved.erase(std::remove_if(e.saved.begin(), e.saved.end(), gone), e.saved.end());

    json index = {{"fingerprint", e.fingerprint()}, {"slots", json::array()}};
    std::set<std::string> keep;
    for (const slot * s : live) {
        std::string name = state_file_name(s->id);
        write_state_file(e, *s, dir / name);
        index["slots"].push_back({{"key", s->key}, {"file", name}, {"tokens", s->tokens}});
        keep.insert(name);
    }
    for (const auto & saved : e.saved) {
        std::string name = fs::path(saved.path).filename().string();
        index["slots"].push_back({{"key", saved.key}, {"file", name}, {"tokens", saved.tokens}});
        keep.insert(name);
    }
    write_file_atomic(dir / "index.json", index.dump());
    keep.insert("index.json");
    remove_own_files(dir, keep);
    e.saved_dir = directory;
    return {{"saved", index["slots"].size()}};
}

json restore_slots(llama_lsp_engine & e, const std::string & directory) {
    fs::path dir(directory);
    e.saved.clear();
    e.saved_dir = directory;
    auto discard = [&](const std::string & why) -> json {
        log_warning("llama-lsp: discarding saved slots in %s: %s\n", directory.c_str(), why.c_str());
        remove_own_files(dir);
        std::error_code ignored;
        fs::remove(dir, ignored);  // only if nothing else is in it
        return {{"known", 0}, {"discarded", why}};
    };
    fs::path index_path = dir / "index.json";
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(index_path, ec))) {
        return {{"known", 0}};
    }
    std::string why = refuse_file(index_path, max_index_size(e));
    if (!why.empty()) {
        return discard("index.json: " + why);
    }
    std::ifstream in(index_path, std::ios::binary);
    json index = json::parse(in, nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("slots") || !index["slots"].is_array()) {
        return discard("corrupt index");
    }
    auto fingerprint = index.find("fingerprint");
    if (fingerprint == index.end() || !fingerprint->is_string() || *fingerprint != e.fingerprint()) {
        return discard("saved for another model or build");
    }
    const json & entries = index["slots"];
    size_t ignored = 0;
    for (size_t i = 0; i < entries.size(); i++) {
        if (e.saved.size() == max_saved_slots(e)) {
            ignored += entries.size() - i;
            log_warning("llama-lsp: ignoring %zu more saved slots in %s: at most %zu are kept\n",
                        entries.size() - i, directory.c_str(), max_saved_slots(e));
            break;
        }
        std::string why_not = add_saved_slot(e, dir, entries[i]);
        if (!why_not.empty()) {
            log_warning("llama-lsp: ignoring a saved slot in %s: %s\n", directory.c_str(), why_not.c_str());
            ignored++;
        }
    }
    json out = {{"known", e.saved.size()}};
    if (ignored > 0) out["ignored"] = ignored;
    return out;
}

json engine_info(llama_lsp_engine & e) {
    char desc[256] = {0};
    llama_model_desc(e.model, desc, sizeof(desc));
    json slots = json::array();
    for (const auto & s : e.slots) {
        slots.push_back({{"id", s.id}, {"key", s.key}, {"n_tokens", s.tokens.size()}, {"last_used", s.last_used}});
    }
    return {
        {"version", llama_lsp_version()},
        {"model_path", e.model_path},
        {"model_desc", desc},
        {"n_params", llama_model_n_params(e.model)},
        {"model_size", llama_model_size(e.model)},
        {"n_ctx", llama_n_ctx(e.ctx)},
        {"n_ctx_slot", llama_n_ctx_seq(e.ctx)},
        {"n_ctx_train", llama_model_n_ctx_train(e.model)},
        {"n_threads", e.n_threads},
        {"n_threads_batch", e.n_threads_batch},
        {"prefill_chunk", e.prefill_chunk},
        {"exact_reuse", e.exact_reuse},
        {"can_reuse", e.can_trim},
        {"slots", slots},
        {"n_saved", e.saved.size()},
        {"fingerprint", e.fingerprint()},
    };
}

void init_backend_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama_log_set(log_trampoline, nullptr);
        llama_backend_init();
    });
}

int default_threads() {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    // Half the cores, at most 4: the editor needs the rest, and ggml's threads spin while they wait
    // for each other, so a thread whose core is busy stalls all of them (measured on 2 cores with the
    // other one loaded: a 1,087-token prefill took 12 s with 1 batch thread and 47-52 s with 2).
    return (int) std::max(1u, std::min(hw / 2, 4u));
}

}  // namespace

LLAMA_LSP_API const char * llama_lsp_version(void) {
    static const std::string version = std::string(k_version) + " (llama.cpp source " + LLAMA_LSP_SOURCE_ID + ")";
    return version.c_str();
}

LLAMA_LSP_API void llama_lsp_set_log_callback(llama_lsp_log_cb callback, void * user_data) {
    g_log_user_data.store(user_data);
    g_log_cb.store(callback);
    init_backend_once();
}

LLAMA_LSP_API llama_lsp_engine * llama_lsp_open(const char * model_path, const char * options_json, char ** error_out) {
    if (error_out) *error_out = nullptr;
    auto fail = [&](const std::string & type, const std::string & message) -> llama_lsp_engine * {
        if (error_out) *error_out = error_json(type, message);
        return nullptr;
    };
    try {
        init_backend_once();
        if (!model_path || !*model_path) return fail("invalid_request", "no model path given");
        json options = parse_object(options_json ? options_json : "{}", "options");
        if (!fs::is_regular_file(model_path)) {
            return fail("model_not_found", std::string("model file not found: ") + model_path);
        }
        auto engine = std::make_unique<llama_lsp_engine>();
        engine->model_path = model_path;
        engine->cache_key = get_or<std::string>(options, "cache_key", "");
        engine->n_threads = get_or<int32_t>(options, "n_threads", 0);
        engine->n_threads_batch = get_or<int32_t>(options, "n_threads_batch", 0);
        if (engine->n_threads <= 0) engine->n_threads = default_threads();
        if (engine->n_threads_batch <= 0) engine->n_threads_batch = engine->n_threads;
        engine->prefill_chunk = std::clamp(get_or<int32_t>(options, "prefill_chunk", 64), 1, 2048);
        engine->exact_reuse = get_or<bool>(options, "exact_reuse", true);
        const int32_t n_slots = std::clamp(get_or<int32_t>(options, "n_slots", 4), 1, 64);

        llama_model_params mp = llama_model_default_params();
        mp.n_gpu_layers = get_or<int32_t>(options, "n_gpu_layers", 0);
        engine->model = llama_model_load_from_file(model_path, mp);
        if (!engine->model) {
            return fail("model_load", std::string("llama.cpp could not load the model (corrupt or unsupported GGUF?): ") + model_path);
        }
        engine->vocab = llama_model_get_vocab(engine->model);

        llama_context_params cp = llama_context_default_params();
        const int32_t n_ctx_slot = std::max(64, get_or<int32_t>(options, "n_ctx", 8192));
        cp.n_ctx = (uint32_t) (n_ctx_slot * n_slots);
        cp.n_batch = (uint32_t) std::max(512, engine->prefill_chunk);
        cp.n_ubatch = cp.n_batch;
        cp.n_seq_max = (uint32_t) n_slots;
        // One KV stream per slot: a sequence's cells then sit exactly where a cold run puts them,
        // and attention (whose kernels tile and split over physical cells) gives identical results.
        // A unified cache would share cells zero-copy but makes answers depend on the other slots.
        cp.kv_unified = false;
        cp.swa_full = true;
        cp.n_threads = engine->n_threads;
        cp.n_threads_batch = engine->n_threads_batch;
        cp.no_perf = true;
        engine->ctx = llama_init_from_model(engine->model, cp);
        if (!engine->ctx) {
            return fail("context", "llama.cpp could not create a context of " + std::to_string(n_ctx_slot) +
                                       " tokens x " + std::to_string(n_slots) + " slots; try a smaller context size");
        }
        llama_set_abort_callback(engine->ctx, abort_callback, engine.get());
        engine->can_trim = !llama_model_is_recurrent(engine->model) && !llama_model_is_hybrid(engine->model);
        try {
            engine->templates = common_chat_templates_init(engine->model, "");
        } catch (const std::exception & ex) {
            return fail("model_load", std::string("the model's chat template could not be read: ") + ex.what());
        }
        for (int32_t i = 0; i < n_slots; i++) {
            slot s;
            s.id = i;
            engine->slots.push_back(s);
        }
        return engine.release();
    } catch (const engine_error & ex) {
        return fail(ex.type, ex.what());
    } catch (const std::exception & ex) {
        return fail("internal", ex.what());
    } catch (...) {
        return fail("internal", "unknown error");
    }
}

namespace {
// Runs fn with the engine held, rejecting concurrent use instead of corrupting state.
template <typename Fn> char * with_engine(llama_lsp_engine * engine, Fn && fn) {
    if (!engine) return error_json("invalid_request", "engine is NULL");
    std::unique_lock<std::mutex> lock(engine->busy, std::try_to_lock);
    if (!lock.owns_lock()) return error_json("busy", "the engine is serving another request");
    return guarded([&]() { return fn(*engine); });
}
}  // namespace

LLAMA_LSP_API char * llama_lsp_generate(llama_lsp_engine * engine, const char * request_json,
                                        llama_lsp_piece_cb on_piece, void * user_data) {
    return with_engine(engine, [&](llama_lsp_engine & e) {
        return generate(e, parse_object(request_json, "request"), on_piece, user_data);
    });
}

LLAMA_LSP_API void llama_lsp_cancel(llama_lsp_engine * engine) {
    if (engine) engine->cancel_requested.store(true);
}

LLAMA_LSP_API void llama_lsp_clear_cancel(llama_lsp_engine * engine) {
    if (engine) engine->cancel_requested.store(false);
}

LLAMA_LSP_API char * llama_lsp_tokenize(llama_lsp_engine * engine, const char * request_json) {
    return with_engine(engine, [&](llama_lsp_engine & e) -> json {
        json request = parse_object(request_json, "request");
        if (request.contains("text")) {
            if (!request["text"].is_string()) throw engine_error("invalid_request", "text must be a string");
            auto tokens = common_tokenize(e.vocab, request["text"].get<std::string>(),
                                          get_or<bool>(request, "add_special", false),
                                          get_or<bool>(request, "parse_special", false));
            return {{"tokens", tokens}};
        }
        prepared_prompt p = prepare(e, request);
        json triggers = json::array();
        for (const auto & t : p.chat.grammar_triggers) {
            triggers.push_back({{"type", (int) t.type}, {"value", t.value}});
        }
        return {{"tokens", p.tokens},
                {"prompt", p.text},
                {"format", common_chat_format_name(p.chat.format)},
                {"generation_prompt", p.chat.generation_prompt},
                {"grammar_lazy", p.chat.grammar_lazy},
                {"grammar_triggers", triggers},
                {"preserved_tokens", p.chat.preserved_tokens},
                {"additional_stops", p.chat.additional_stops}};
    });
}

LLAMA_LSP_API char * llama_lsp_save_slots(llama_lsp_engine * engine, const char * directory) {
    return with_engine(engine, [&](llama_lsp_engine & e) {
        if (!directory || !*directory) throw engine_error("invalid_request", "no directory given");
        return save_slots(e, directory);
    });
}

LLAMA_LSP_API char * llama_lsp_restore_slots(llama_lsp_engine * engine, const char * directory) {
    return with_engine(engine, [&](llama_lsp_engine & e) {
        if (!directory || !*directory) throw engine_error("invalid_request", "no directory given");
        return restore_slots(e, directory);
    });
}

LLAMA_LSP_API char * llama_lsp_info(llama_lsp_engine * engine) {
    return with_engine(engine, [&](llama_lsp_engine & e) { return engine_info(e); });
}

LLAMA_LSP_API char * llama_lsp_clear(llama_lsp_engine * engine) {
    return with_engine(engine, [&](llama_lsp_engine & e) -> json {
        int n = 0;
        for (auto & s : e.slots) {
            n += s.tokens.empty() ? 0 : 1;
            e.clear_slot(s);
            s.key.clear();
        }
        llama_memory_clear(e.memory(), true);
        e.saved.clear();  // "cold" means nothing reused, not even state saved on disk
        return {{"cleared", n}};
    });
}

LLAMA_LSP_API void llama_lsp_free_string(char * text) { std::free(text); }

LLAMA_LSP_API void llama_lsp_close(llama_lsp_engine * engine) {
    try {
        delete engine;
    } catch (...) {
    }
}
