// slots.cpp: which slot serves a request and how much of its prompt it already holds.
//
// The invariant everything here keeps: a slot's `tokens` are exactly what its sequence's cells hold,
// at positions 0..n-1. Whatever cannot be trimmed exactly is cleared, and a request commits its new
// record only on the happy path (cache_guard in engine.h).

#include "engine.h"

#include <algorithm>

using namespace llama_lsp;

void llama_lsp_engine::clear_slot(slot & s) {
    llama_memory_seq_rm(memory(), s.id, -1, -1);
    s.tokens.clear();
}

void llama_lsp_engine::trim_slot(slot & s, size_t n) {
    if (n >= s.tokens.size()) {
        return;
    }
    // SWA models can report success yet keep too few cells: check the positions, not the return value.
    if (n == 0 || !can_trim || !llama_memory_seq_rm(memory(), s.id, (llama_pos) n, -1) ||
        llama_memory_seq_pos_max(memory(), s.id) != (llama_pos) n - 1) {
        clear_slot(s);
        return;
    }
    s.tokens.resize(n);
}

size_t llama_lsp_engine::reusable(size_t n_common, size_t n_prompt) const {
    if (!can_trim || n_prompt == 0) {
        return 0;
    }
    size_t keep = std::min(n_common, n_prompt - 1);  // always evaluate at least one token
    if (exact_reuse) {
        keep -= keep % (size_t) prefill_chunk;
    }
    return keep;
}

namespace llama_lsp {

size_t common_prefix(const std::vector<llama_token> & a, const std::vector<llama_token> & b) {
    size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) {
        i++;
    }
    return i;
}

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

}  // namespace llama_lsp
