// api.cpp: the C functions of llama_lsp.h.
//
// JSON comes in and goes out here, the model and its context are opened here, and llama.cpp's log is
// routed from here. This is the one place where every exception is caught: each function turns them
// into an error object ({"error": {"type", "message"}}) or an error return, so none crosses the C
// boundary. Everything else lives behind engine.h.

#include "engine.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#define LLAMA_LSP_API extern "C" __attribute__((visibility("default")))

using namespace llama_lsp;
namespace fs = std::filesystem;

namespace {

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

// Runs fn with the engine held, rejecting concurrent use instead of corrupting state.
template <typename Fn> char * with_engine(llama_lsp_engine * engine, Fn && fn) {
    if (!engine) return error_json("invalid_request", "engine is NULL");
    std::unique_lock<std::mutex> lock(engine->busy, std::try_to_lock);
    if (!lock.owns_lock()) return error_json("busy", "the engine is serving another request");
    return guarded([&]() { return fn(*engine); });
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

// ---- Log and abort -------------------------------------------------------------------------------------

std::atomic<llama_lsp_log_cb> g_log_cb{nullptr};
std::atomic<void *> g_log_user_data{nullptr};
std::atomic<int> g_aborting{0};  // while > 0, llama.cpp's errors about the abort are expected

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

void init_backend_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama_log_set(log_trampoline, nullptr);
        llama_backend_init();
    });
}

// ---- Open, describe, clear -----------------------------------------------------------------------------

int default_threads() {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    // Half the cores, at most 4: the editor needs the rest, and ggml's threads spin while they wait
    // for each other, so a thread whose core is busy stalls all of them (measured on 2 cores with the
    // other one loaded: a 1,087-token prefill took 12 s with 1 batch thread and 47-52 s with 2).
    return (int) std::max(1u, std::min(hw / 2, 4u));
}

// Loads the model and creates its context; throws engine_error for anything the caller should hear of.
std::unique_ptr<llama_lsp_engine> open_engine(const char * model_path, const json & options) {
    if (!fs::is_regular_file(model_path)) {
        throw engine_error("model_not_found", std::string("model file not found: ") + model_path);
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
    engine->speculative = get_or<bool>(options, "speculative", true);
    const int32_t n_slots = std::clamp(get_or<int32_t>(options, "n_slots", 4), 1, 64);

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = get_or<int32_t>(options, "n_gpu_layers", 0);
    // Flash attention off on a CPU: llama.cpp's CPU kernel for it is slower at what we do most, reading
    // a few new tokens (a follow-up) and decoding over a long cache. llama-bench, 1 thread, 2,300 tokens
    // in the cache, 0.5B: 19 new tokens at 22.5 tok/s with it, 35.5 without; 1.5B decode 6.9 and 8.2.
    // Long prompts read about as fast either way (pp512 at depth 2,048: 38.8 and 40.9).
    engine->flash_attn = get_or<std::string>(options, "flash_attn", mp.n_gpu_layers > 0 ? "auto" : "off");
    static const std::map<std::string, llama_flash_attn_type> flash_attn_types = {
        {"on", LLAMA_FLASH_ATTN_TYPE_ENABLED},
        {"off", LLAMA_FLASH_ATTN_TYPE_DISABLED},
        {"auto", LLAMA_FLASH_ATTN_TYPE_AUTO}};
    const auto flash_attn_type = flash_attn_types.find(engine->flash_attn);
    if (flash_attn_type == flash_attn_types.end()) {
        throw engine_error("invalid_request", "flash_attn must be \"on\", \"off\" or \"auto\", not \"" +
                                                  engine->flash_attn + "\"");
    }
    engine->model = llama_model_load_from_file(model_path, mp);
    if (!engine->model) {
        throw engine_error("model_load", std::string("llama.cpp could not load the model (corrupt or unsupported GGUF?): ") + model_path);
    }
    engine->vocab = llama_model_get_vocab(engine->model);
    // Only a model with fill-in-the-middle tokens can use a completion slot: none is made for others.
    const bool completion_slot = get_or<bool>(options, "completion_slot", false) && can_infill(engine->vocab);
    const int32_t n_sequences = n_slots + (completion_slot ? 1 : 0);

    llama_context_params cp = llama_context_default_params();
    const int32_t n_ctx_slot = std::max(64, get_or<int32_t>(options, "n_ctx", 8192));
    cp.n_ctx = (uint32_t) (n_ctx_slot * n_sequences);
    cp.n_batch = (uint32_t) std::max(512, engine->prefill_chunk);
    cp.n_ubatch = cp.n_batch;
    cp.n_seq_max = (uint32_t) n_sequences;
    // One KV stream per slot: a sequence's cells then sit exactly where a cold run puts them,
    // and attention (whose kernels tile and split over physical cells) gives identical results.
    // A unified cache would share cells zero-copy but makes answers depend on the other slots.
    cp.kv_unified = false;
    cp.swa_full = true;
    cp.n_threads = engine->n_threads;
    cp.n_threads_batch = engine->n_threads_batch;
    cp.flash_attn_type = flash_attn_type->second;
    cp.no_perf = true;
    engine->ctx = llama_init_from_model(engine->model, cp);
    if (!engine->ctx) {
        throw engine_error("context", "llama.cpp could not create a context of " + std::to_string(n_ctx_slot) +
                                          " tokens x " + std::to_string(n_slots) + " slots; try a smaller context size");
    }
    llama_set_abort_callback(engine->ctx, abort_callback, engine.get());
    engine->can_trim = !llama_model_is_recurrent(engine->model) && !llama_model_is_hybrid(engine->model);
    try {
        engine->templates = common_chat_templates_init(engine->model, "");
    } catch (const std::exception & ex) {
        throw engine_error("model_load", std::string("the model's chat template could not be read: ") + ex.what());
    }
    engine->message_start = message_start_token(*engine);
    for (int32_t i = 0; i < n_sequences; i++) {
        slot s;
        s.id = i;
        s.infill = i == n_slots;  // the last one, when there is one
        engine->slots.push_back(s);
    }
    return engine;
}

json engine_info(llama_lsp_engine & e) {
    char desc[256] = {0};
    llama_model_desc(e.model, desc, sizeof(desc));
    json slots = json::array();
    for (const auto & s : e.slots) {
        slots.push_back({{"id", s.id},
                         {"key", s.key},
                         {"n_tokens", s.tokens.size()},
                         {"last_used", s.last_used},
                         {"completion", s.infill}});
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
        {"message_start", e.message_start},
        {"exact_reuse", e.exact_reuse},
        {"speculative", e.speculative},
        {"flash_attn", e.flash_attn},
        {"can_reuse", e.can_trim},
        {"can_infill", can_infill(e.vocab)},
        {"slots", slots},
        {"n_saved", e.saved.size()},
        {"fingerprint", e.fingerprint()},
    };
}

json clear_engine(llama_lsp_engine & e) {
    int n = 0;
    for (auto & s : e.slots) {
        n += s.tokens.empty() ? 0 : 1;
        e.clear_slot(s);
        s.key.clear();
    }
    llama_memory_clear(e.memory(), true);
    e.saved.clear();  // "cold" means nothing reused, not even state saved on disk
    return {{"cleared", n}};
}

json tokenize(llama_lsp_engine & e, const json & request) {
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
}

// ---- Test support --------------------------------------------------------------------------------------

int collect_piece(void * user_data, const char * text, int length) {
    static_cast<json *>(user_data)->push_back(std::string(text, (size_t) length));
    return 0;
}

// Runs one of text.cpp's functions for llama_lsp_test_text.
json test_text(const std::string & function, const std::string & text, const json & args) {
    auto strings = [&](const char * key) { return get_or<std::vector<std::string>>(args, key, {}); };
    if (function == "utf8_complete_prefix") {
        return {{"n", utf8_complete_prefix(text)}};
    }
    if (function == "stop_overlap") {
        return {{"n", stop_overlap(text, strings("stops"))}};
    }
    if (function == "tool_call_start") {
        return {{"n", tool_call_start(text, strings("openers"), strings("tool_names"))}};
    }
    if (function == "extract_json_call") {
        common_chat_tool_call call;
        std::string rest;
        if (!extract_json_call(text, strings("tool_names"), call, rest)) {
            return {{"found", false}};
        }
        return {{"found", true}, {"name", call.name}, {"arguments", call.arguments}, {"rest", rest}};
    }
    if (function == "stream") {
        json pieces = json::array();
        piece_streamer streamer(collect_piece, &pieces, strings("stops"), get_or<bool>(args, "tools", false),
                                strings("openers"), strings("tool_names"));
        for (size_t cut : get_or<std::vector<size_t>>(args, "cuts", {})) {
            streamer.update(text.substr(0, std::min(cut, text.size())));
        }
        if (args.contains("final")) {
            const std::string final_content = get_or<std::string>(args, "final", "");
            streamer.update(text, &final_content);
        }
        return {{"pieces", pieces}};
    }
    throw engine_error("invalid_request", "no text function named '" + function + "'");
}

}  // namespace

// ---- Behind engine.h -----------------------------------------------------------------------------------

llama_lsp_engine::~llama_lsp_engine() {
    templates.reset();
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
}

namespace llama_lsp {

void log_warning(const char * format, ...) {
    llama_lsp_log_cb cb = g_log_cb.load();
    if (!cb) return;
    char text[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    cb(g_log_user_data.load(), 3, text);
}

abort_scope::~abort_scope() {
    if (engine.abort_logged.exchange(false)) {
        g_aborting--;
    }
}

}  // namespace llama_lsp

// ---- The C API -----------------------------------------------------------------------------------------

LLAMA_LSP_API int llama_lsp_abi_version(void) { return LLAMA_LSP_ABI_VERSION; }

LLAMA_LSP_API const char * llama_lsp_version(void) {
    static const std::string version = std::string(k_version) + " (ABI " + std::to_string(LLAMA_LSP_ABI_VERSION) +
                                       "; llama.cpp: " + LLAMA_LSP_LLAMA_CPP_ORIGIN + ", source " +
                                       LLAMA_LSP_SOURCE_ID + ")";
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
        return open_engine(model_path, options).release();
    } catch (const engine_error & ex) {
        return fail(ex.type, ex.what());
    } catch (const std::exception & ex) {
        return fail("internal", ex.what());
    } catch (...) {
        return fail("internal", "unknown error");
    }
}

LLAMA_LSP_API char * llama_lsp_generate(llama_lsp_engine * engine, const char * request_json,
                                        llama_lsp_piece_cb on_piece, void * user_data) {
    return with_engine(engine, [&](llama_lsp_engine & e) {
        return generate(e, parse_object(request_json, "request"), on_piece, user_data);
    });
}

LLAMA_LSP_API void llama_lsp_cancel(llama_lsp_engine * engine) {
    if (engine) engine->cancel_requested.store(true);
}

LLAMA_LSP_API void llama_lsp_yield(llama_lsp_engine * engine) {
    if (engine) engine->yield_requested.store(true);
}

LLAMA_LSP_API void llama_lsp_clear_cancel(llama_lsp_engine * engine) {
    if (engine) engine->forget_stop_requests();
}

LLAMA_LSP_API char * llama_lsp_tokenize(llama_lsp_engine * engine, const char * request_json) {
    return with_engine(engine, [&](llama_lsp_engine & e) { return tokenize(e, parse_object(request_json, "request")); });
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
    return with_engine(engine, [&](llama_lsp_engine & e) { return clear_engine(e); });
}

LLAMA_LSP_API void llama_lsp_free_string(char * text) { std::free(text); }

LLAMA_LSP_API void llama_lsp_close(llama_lsp_engine * engine) {
    try {
        delete engine;
    } catch (...) {
    }
}

LLAMA_LSP_API char * llama_lsp_test_text(const char * function, const char * text, int length, const char * args_json) {
    return guarded([&]() -> json {
        if (!function) throw engine_error("invalid_request", "function is NULL");
        if (length < 0 || (!text && length > 0)) throw engine_error("invalid_request", "text and length disagree");
        return test_text(function, std::string(text ? text : "", (size_t) length),
                         parse_object(args_json ? args_json : "{}", "args"));
    });
}
