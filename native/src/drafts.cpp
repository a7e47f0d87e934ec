// drafts.cpp: drafts for speculative decoding, from llama.cpp's own n-gram drafters (common/speculative.h).
//
// A code action mostly writes back a block it was shown, so the prompt itself is the draft: the tokens
// that followed the last few generated tokens where they occur earlier in the prompt (or the answer).
// generate.cpp verifies a draft in one batch and keeps the longest prefix that greedy sampling agrees
// with, so the answer is the one plain decoding would give, up to float near-ties between a batch and
// one-token evaluations.
//
// Exactness: a drafter is made fresh for each request and sees only that request's tokens, so the
// drafts, and with them how the answer's tokens are batched, are a function of the request: the same
// request drafts the same way warm or cold.
//
// Drafting where it pays: on this kind of CPU a verify batch of n tokens costs about n/3 decode steps
// (reading a prompt is ~3x faster per token than writing one), so a rejected draft is lost time. After
// a draft that was mostly rejected, drafting pauses, longer after each such draft in a row; prose, where
// n-grams rarely repeat, then costs almost nothing.

#include "engine.h"

#include <algorithm>

namespace llama_lsp {

namespace {

// Pauses after 1, 2, 3, ... mostly rejected drafts in a row, in generated tokens.
constexpr int32_t k_first_pause = 8;
constexpr int32_t k_longest_pause = 256;

}  // namespace

draft_settings draft_settings::from_request(const json & request, bool engine_default) {
    draft_settings d;
    d.enabled = get_or<bool>(request, "speculative", engine_default);
    // Benchmarks and tests only: which of llama.cpp's n-gram drafters, and their sizes.
    const json tuning = get_or<json>(request, "debug_draft", json::object());
    if (!tuning.is_object()) {
        throw engine_error("invalid_request", "debug_draft must be an object");
    }
    d.type = get_or<std::string>(tuning, "type", d.type);
    d.n_max = std::clamp(get_or<int32_t>(tuning, "n_max", d.n_max), 1, 256);
    d.n_min = std::clamp(get_or<int32_t>(tuning, "n_min", d.n_min), 1, d.n_max);
    d.n_match = std::clamp(get_or<int32_t>(tuning, "n_match", d.n_match), 1, 64);
    d.adaptive = get_or<bool>(tuning, "adaptive", d.adaptive);
    d.spoil_after = get_or<int32_t>(tuning, "spoil_after", d.spoil_after);
    const auto type = common_speculative_type_from_name(d.type);
    if (type != COMMON_SPECULATIVE_TYPE_NGRAM_MOD && type != COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE &&
        type != COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K) {
        throw engine_error("invalid_request", "debug_draft.type must be ngram-mod, ngram-simple or ngram-map-k");
    }
    return d;
}

drafter::drafter(const draft_settings & settings, const std::vector<llama_token> & prompt) : settings_(settings) {
    common_params_speculative params;
    params.types = {common_speculative_type_from_name(settings.type)};
    params.ngram_mod.n_match = settings.n_match;
    params.ngram_mod.n_max = settings.n_max;
    params.ngram_mod.n_min = settings.n_min;
    params.ngram_simple.size_n = (uint16_t) settings.n_match;
    params.ngram_simple.size_m = (uint16_t) settings.n_max;
    params.ngram_map_k.size_n = (uint16_t) settings.n_match;
    params.ngram_map_k.size_m = (uint16_t) settings.n_max;
    spec_.reset(common_speculative_init(params, 1));
    if (!spec_) {
        throw engine_error("internal", "llama.cpp made no drafter for " + settings.type);
    }
    common_speculative_begin(spec_.get(), 0, prompt);
}

std::vector<llama_token> drafter::propose(const std::vector<llama_token> & cells, llama_token last, int32_t n_max) {
    std::vector<llama_token> draft;
    if (n_max < settings_.n_min) {
        return draft;
    }
    if (paused_for_ > 0) {
        paused_for_--;
        return draft;
    }
    auto & dp = common_speculative_get_draft_params(spec_.get(), 0);
    dp.drafting = true;
    dp.n_max = std::min(n_max, settings_.n_max);
    dp.pos0 = (llama_pos) cells.size();
    dp.id_last = last;
    dp.prompt = &cells;
    dp.result = &draft;
    common_speculative_draft(spec_.get());
    dp.prompt = nullptr;
    dp.result = nullptr;
    if (settings_.spoil_after >= 0) {
        // Tests only: drafts the model must reject from here on (correctness never depends on a draft).
        for (size_t i = (size_t) settings_.spoil_after; i < draft.size(); i++) {
            draft[i] = 0;
        }
    }
    n_proposed_ = draft.size();
    n_drafted += (int64_t) draft.size();
    return draft;
}

void drafter::accepted(size_t n) {
    n_accepted += (int64_t) n;
    if (n_proposed_ == 0) {
        return;
    }
    common_speculative_accept(spec_.get(), 0, (uint16_t) n);
    if (settings_.adaptive && 2 * n < n_proposed_) {
        failures_in_a_row_++;
        paused_for_ = std::min(k_longest_pause, k_first_pause << std::min(failures_in_a_row_ - 1, 16));
    } else {
        failures_in_a_row_ = 0;
    }
    n_proposed_ = 0;
}

}  // namespace llama_lsp
