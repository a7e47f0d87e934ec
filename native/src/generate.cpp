// generate.cpp: one chat completion, in named steps.
//
//   read_request  everything the request asks for, checked before any slot is touched
//   match         pick a slot and find the reusable prefix of the prompt (slots.cpp)
//   prefill       evaluate the rest of the prompt in chunks cut where its tokens say (engine.h)
//   decode        sample, stream, feed each token back with a draft of the next ones (drafts.cpp),
//                 keep what greedy sampling agrees with (not for a "warm" request)
//   answer        parse the raw answer into content and tool calls; the result object
//   commit        keep only what the cells hold and a later request may safely reuse
//
// From match on, a cache_guard clears the slot unless commit runs: an exception anywhere in between
// leaves the slot empty, never out of step with its cells.

#include "engine.h"

#include <algorithm>
#include <memory>

namespace llama_lsp {

namespace {

using steady = std::chrono::steady_clock;

struct sampler_deleter {
    void operator()(common_sampler * s) const { common_sampler_free(s); }
};
using sampler_ptr = std::unique_ptr<common_sampler, sampler_deleter>;

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
    batch_holder(const batch_holder &) = delete;
    batch_holder & operator=(const batch_holder &) = delete;
};

// One request on its way through the steps.
struct generation {
    steady::time_point t_start;

    // read_request
    prepared_prompt p;
    size_t n_prompt = 0;
    int32_t max_tokens = 0;
    std::vector<std::string> stops;
    sampler_ptr sampler;
    std::string key;             // the slot the request names ("" = any)
    bool background = false;     // may not evict a conversation (pick_slot)
    bool exact = true;           // exact reuse (engine.h); infill requests reuse the longest common prefix
    int fail_after_chunks = -1;    // a fault injected by the tests: debug_fail_prefill_after_chunks
    int cancel_after_chunks = -1;  // a cancel injected by the tests: debug_cancel_prefill_after_chunks
    draft_settings drafts;

    // match
    size_t n_common = 0;  // tokens of the prompt the slot (or its donor) held
    size_t n_reused = 0;  // tokens kept without evaluation
    double t_match_ms = 0.0;

    // prefill
    size_t pos = 0;  // the prompt's tokens in the slot's cells
    double t_prefill_ms = 0.0;

    // decode
    std::string finish_reason = "stop";  // stop | length | tool_calls | cancelled | error
    std::string error_message;
    std::string raw;
    std::vector<llama_token> generated;
    int64_t n_drafted = 0;
    int64_t n_accepted = 0;  // drafted tokens the model agreed with
    double t_first_token_ms = 0.0;
    double t_decode_ms = 0.0;
};

void read_request(llama_lsp_engine & e, const json & request, generation & g) {
    g.p = prepare(e, request);
    const size_t n_ctx = llama_n_ctx_seq(e.ctx);
    g.n_prompt = g.p.tokens.size();
    if (g.n_prompt >= n_ctx) {
        throw engine_error("context_overflow", "the prompt has " + std::to_string(g.n_prompt) +
                                                   " tokens but the context holds " + std::to_string(n_ctx) +
                                                   "; shorten the input or raise the context size");
    }
    int32_t max_tokens = get_or<int32_t>(request, "max_tokens", 512);
    if (max_tokens <= 0) {
        throw engine_error("invalid_request", "max_tokens must be positive");
    }
    g.max_tokens = (int32_t) std::min<size_t>((size_t) max_tokens, n_ctx - g.n_prompt);
    g.key = get_or<std::string>(request, "slot", "");
    g.background = get_or<bool>(request, "background", false);
    g.exact = e.exact_reuse && !g.p.is_infill;
    g.fail_after_chunks = get_or<int>(request, "debug_fail_prefill_after_chunks", -1);
    g.cancel_after_chunks = get_or<int>(request, "debug_cancel_prefill_after_chunks", -1);
    g.drafts = draft_settings::from_request(request, e.speculative);
    // Completion answers are a few tokens under a time budget, and memory that cannot be trimmed
    // (recurrent models) cannot drop a rejected draft's cells.
    g.drafts.enabled = g.drafts.enabled && !g.p.is_infill && e.can_trim;
    if (g.p.warm) {
        return;  // nothing is sampled
    }
    g.stops = g.p.chat.additional_stops;
    if (request.contains("stop")) {
        for (const auto & s : request["stop"]) {
            if (!s.is_string()) throw engine_error("invalid_request", "stop must be a list of strings");
            if (!s.get<std::string>().empty()) g.stops.push_back(s.get<std::string>());
        }
    }
    common_params_sampling sp = sampling_params(e, request, g.p);
    g.sampler.reset(common_sampler_init(e.model, sp));
    if (!g.sampler) {
        throw engine_error("invalid_request", "could not build the sampler (bad grammar?)");
    }
}

// Picks a slot, gives it the best cached prefix, drops the rest of what it held.
slot & match(llama_lsp_engine & e, generation & g) {
    slot & s = pick_slot(e, g.key, g.p.tokens, g.background, g.p.is_infill);
    if (s.key != g.key || g.key.empty()) {
        s.background = g.background;  // a new owner; warming a conversation's own slot keeps it its own
    }
    s.key = g.key;
    s.last_used = ++e.clock;
    // An answer needs the logits of the prompt's last token, so that one is always evaluated; a warm
    // request only fills the cache.
    const size_t limit = g.p.warm ? g.n_prompt : g.n_prompt - 1;
    share_prefix(e, s, g.p.tokens, limit);
    g.n_common = common_prefix(s.tokens, g.p.tokens);
    const size_t keep = e.reusable(g.p.tokens, s.tokens, limit, g.exact);
    // A warm request whose whole prompt the slot holds has nothing to read, and what the slot holds
    // after it (the question asked after this document, restored from disk, say) was read as exactly
    // as the prompt: it stays for the next request to reuse.
    if (!(g.p.warm && keep == g.n_prompt)) {
        e.trim_slot(s, keep);
    }
    g.n_reused = std::min(s.tokens.size(), g.n_prompt);  // trimming may have had to clear the slot
    g.t_match_ms = ms_since(g.t_start);
    return s;
}

// Evaluates the prompt after the reused prefix, chunk by chunk, cut where a cold run cuts it; the
// slot's record grows with each chunk. Stops early when cancelled: the chunks done stay valid.
void prefill(llama_lsp_engine & e, generation & g, slot & s, llama_batch & batch) {
    const auto t_prefill_start = steady::now();
    // Inexact reads go in llama.cpp-batch-sized chunks, except infill's: a keystroke preempts the
    // completion slot's warming, and a chunk cut short is read again, so its chunks stay small.
    const size_t n_inexact = g.p.is_infill ? (size_t) e.prefill_chunk : (size_t) llama_n_batch(e.ctx);
    g.pos = g.n_reused;
    int chunks_done = 0;
    while (g.pos < g.n_prompt) {
        size_t end = g.exact ? e.chunk_end(g.p.tokens, g.pos) : std::min(g.n_prompt, g.pos + n_inexact);
        batch.n_tokens = 0;
        for (size_t i = g.pos; i < end; i++) {
            add_to_batch(batch, g.p.tokens[i], (llama_pos) i, s.id, i == g.n_prompt - 1);
        }
        int rc = llama_decode(e.ctx, batch);
        if (rc == 0 && g.fail_after_chunks >= 0 && chunks_done == g.fail_after_chunks) {
            rc = -1;  // a fault injected by the tests: the chunk went into the cache, the call "failed"
        }
        if (rc != 0) {
            if (rc == 2 || e.cancel_requested.load()) {
                g.finish_reason = "cancelled";
                break;
            }
            throw engine_error("decode_failed", "llama_decode failed with code " + std::to_string(rc) +
                                                    " while reading the prompt");
        }
        chunks_done++;
        s.tokens.insert(s.tokens.end(), g.p.tokens.begin() + (long) g.pos, g.p.tokens.begin() + (long) end);
        g.pos = end;
        if (chunks_done == g.cancel_after_chunks) {
            e.cancel_requested.store(true);  // as if another thread had cancelled just now
        }
        if (e.cancel_requested.load() || e.yield_requested.load()) {
            g.finish_reason = "cancelled";
            break;
        }
    }
    g.t_prefill_ms = ms_since(t_prefill_start);
}

// Takes one sampled token into the answer: false when the answer ends with it (or before it).
bool take_token(llama_lsp_engine & e, generation & g, llama_token token, piece_streamer & streamer) {
    if (g.generated.empty()) {
        g.t_first_token_ms = ms_since(g.t_start);
    }
    if (llama_vocab_is_eog(e.vocab, token)) {
        return false;
    }
    g.generated.push_back(token);
    g.raw += common_token_to_piece(e.ctx, token, false);
    bool stopped = false;
    for (const auto & stop : g.stops) {
        size_t at = g.raw.find(stop);
        if (at != std::string::npos) {
            g.raw.resize(at);
            stopped = true;
        }
    }
    if (stopped) return false;
    if (!streamer.update(g.raw)) {
        g.finish_reason = "cancelled";
        return false;
    }
    if ((int32_t) g.generated.size() >= g.max_tokens) {
        g.finish_reason = "length";
        return false;
    }
    if (e.cancel_requested.load()) {
        g.finish_reason = "cancelled";
        return false;
    }
    return true;
}

// Samples and streams the answer. Each step feeds the last sampled token back with a draft of the
// tokens that may follow it, evaluated in one batch; greedy sampling over the batch's logits keeps the
// draft's longest prefix that it agrees with, plus one token of its own. The rejected rest leaves the
// cells, so the slot's record stays exactly what they hold. Without a draft a step is plain decoding.
void decode(llama_lsp_engine & e, generation & g, slot & s, llama_batch & batch, piece_streamer & streamer) {
    if (g.finish_reason != "stop") {
        return;  // the prompt was not read to its end (cancelled): there are no logits to sample from
    }
    const auto t_decode_start = steady::now();
    std::unique_ptr<drafter> drafts;
    if (g.drafts.enabled) {
        drafts = std::make_unique<drafter>(g.drafts, g.p.tokens);
    }
    const size_t n_ctx = llama_n_ctx_seq(e.ctx);
    const int32_t n_batch = (int32_t) llama_n_batch(e.ctx);
    std::vector<llama_token> sampled = {common_sampler_sample(g.sampler.get(), e.ctx, -1)};
    common_sampler_accept(g.sampler.get(), sampled[0], true);
    while (true) {
        bool go_on = true;
        for (llama_token token : sampled) {
            go_on = go_on && take_token(e, g, token, streamer);
        }
        if (!go_on) break;

        const llama_token last = sampled.back();
        std::vector<llama_token> draft;
        if (drafts) {
            // The batch must fit, the draft's cells the context, and its tokens the answer's budget.
            const int32_t room = std::min({n_batch - 1, (int32_t) (n_ctx - s.tokens.size()) - 2,
                                           g.max_tokens - (int32_t) g.generated.size() - 1});
            draft = drafts->propose(s.tokens, last, room);
        }
        batch.n_tokens = 0;
        add_to_batch(batch, last, (llama_pos) s.tokens.size(), s.id, true);
        for (size_t i = 0; i < draft.size(); i++) {
            add_to_batch(batch, draft[i], (llama_pos) (s.tokens.size() + 1 + i), s.id, true);
        }
        int rc = llama_decode(e.ctx, batch);
        if (rc != 0) {
            if (rc == 2 || e.cancel_requested.load()) {
                g.finish_reason = "cancelled";
            } else {
                g.finish_reason = "error";
                g.error_message = "llama_decode failed with code " + std::to_string(rc) + " while answering";
            }
            break;
        }
        s.tokens.push_back(last);
        if (draft.empty()) {
            sampled = {common_sampler_sample(g.sampler.get(), e.ctx, -1)};
            common_sampler_accept(g.sampler.get(), sampled[0], true);
            continue;
        }
        // Accepts every token it returns: the draft's agreed prefix, then the model's own next token.
        sampled = common_sampler_sample_and_accept_n(g.sampler.get(), e.ctx, draft);
        const size_t n_agreed = sampled.size() - 1;
        s.tokens.insert(s.tokens.end(), draft.begin(), draft.begin() + (long) n_agreed);
        if (n_agreed < draft.size() &&
            !llama_memory_seq_rm(e.memory(), s.id, (llama_pos) s.tokens.size(), -1)) {
            throw engine_error("decode_failed", "could not drop a rejected draft from the cache");
        }
        drafts->accepted(n_agreed);
    }
    if (drafts) {
        g.n_drafted = drafts->n_drafted;
        g.n_accepted = drafts->n_accepted;
    }
    g.t_decode_ms = g.generated.empty() ? 0.0 : ms_since(t_decode_start);
}

json stats_json(const generation & g, const slot & s) {
    return {
        {"n_prompt", g.n_prompt},           {"n_common", g.n_common},
        {"n_reused", g.n_reused},           {"n_evaluated", g.pos - g.n_reused},
        {"n_generated", g.generated.size()}, {"t_match_ms", g.t_match_ms},
        {"t_prefill_ms", g.t_prefill_ms},   {"t_first_token_ms", g.t_first_token_ms},
        {"t_decode_ms", g.t_decode_ms},     {"n_drafted", g.n_drafted},
        {"n_accepted", g.n_accepted},       {"slot", s.id},
    };
}

// The result object: the parsed answer, why it ended, its tokens and the request's counters.
json answer(generation & g, const json & request, const slot & s, piece_streamer & streamer) {
    json result;
    parse_answer(g.p, request, g.raw, result);
    if (g.finish_reason == "stop" || g.finish_reason == "length") {
        // A continued answer's content begins with the start it was given, which was never streamed.
        std::string written = result["content"].get<std::string>();
        if (!g.p.continued.empty() && written.rfind(g.p.continued, 0) == 0) {
            written.erase(0, g.p.continued.size());
        }
        streamer.update(g.raw, &written);
    }
    if (g.finish_reason == "stop" && !result["tool_calls"].empty()) {
        g.finish_reason = "tool_calls";
    }
    result["finish_reason"] = g.finish_reason;
    if (!g.error_message.empty()) {
        result["error_message"] = g.error_message;
    }
    result["tokens"] = g.generated;
    result["stats"] = stats_json(g, s);
    return result;
}

// Commits only what the cells now hold and a later request may safely keep; otherwise the guard
// clears the slot.
void commit(llama_lsp_engine & e, const generation & g, slot & s, cache_guard & guard) {
    const std::string & finish = g.finish_reason;
    if (finish == "stop" || finish == "length" || finish == "tool_calls") {
        if (g.exact && !g.p.warm) {
            e.trim_slot(s, g.n_prompt);  // KV written one token at a time differs from a prompt evaluation
        }
        guard.commit();
    } else if (finish == "cancelled") {
        // The chunks read before the cancel are complete and safe to keep; an aborted chunk is not,
        // nor is anything written while answering.
        e.trim_slot(s, g.pos);
        guard.commit();
    }
}

// The result of a warm request: nothing answered, the prompt (or as much of it as was read) cached.
json warm_result(const generation & g, const slot & s) {
    return {{"content", ""},
            {"tool_calls", json::array()},
            {"finish_reason", g.finish_reason},
            {"tokens", json::array()},
            {"stats", stats_json(g, s)}};
}

}  // namespace

json generate(llama_lsp_engine & e, const json & request, llama_lsp_piece_cb on_piece, void * user_data) {
    generation g;
    g.t_start = steady::now();
    // Not reset here: a cancel that arrives just before this call starts is meant for it. The call
    // consumes the cancel when it ends, however it ends.
    struct forget_cancel {
        llama_lsp_engine & engine;
        ~forget_cancel() { engine.forget_stop_requests(); }
    } forget{e};

    read_request(e, request, g);
    slot & s = match(e, g);
    cache_guard guard(e, s);
    abort_scope aborting{e};

    batch_holder holder((int32_t) llama_n_batch(e.ctx));
    prefill(e, g, s, holder.batch);
    if (g.p.warm) {
        json result = warm_result(g, s);
        commit(e, g, s, guard);
        return result;
    }

    std::vector<std::string> openers;
    std::string opener = tool_call_opener(g.p.chat);
    if (!opener.empty()) openers.push_back(opener);
    piece_streamer streamer(on_piece, user_data, g.stops, g.p.has_tools, std::move(openers), g.p.tool_names);
    decode(e, g, s, holder.batch, streamer);

    json result = answer(g, request, s, streamer);
    commit(e, g, s, guard);
    return result;
}

}  // namespace llama_lsp
