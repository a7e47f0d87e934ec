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

size_t llama_lsp_engine::chunk_end(const std::vector<llama_token> & tokens, size_t from) const {
    const size_t end = std::min(tokens.size(), from + (size_t) prefill_chunk);
    for (size_t i = from + 1; i < end; i++) {
        if (tokens[i] == message_start) {
            return i;
        }
    }
    return end;
}

size_t llama_lsp_engine::reusable(const std::vector<llama_token> & prompt, const std::vector<llama_token> & cached,
                                  size_t limit, bool exact) const {
    if (!can_trim) {
        return 0;
    }
    const size_t n_common = common_prefix(prompt, cached);
    const size_t n = std::min(n_common, limit);
    if (!exact) {
        return n;
    }
    // The cuts of both token lists agree before n_common, since each depends only on the tokens before
    // it. At n_common itself the prompt may cut (before a message start, or where it ends) while the
    // cache's chunk ran on past it: then only the cut before is shared.
    size_t cut = 0;
    size_t previous = 0;
    while (true) {
        size_t next = chunk_end(prompt, cut);
        if (next > n || next == cut) break;
        previous = cut;
        cut = next;
    }
    if (cut == n_common && cut < cached.size() && chunk_end(cached, previous) != cut) {
        return previous;
    }
    return cut;
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

slot & pick_slot(llama_lsp_engine & e, const std::string & key, const std::vector<llama_token> & prompt,
                 bool background, bool infill) {
    if (infill) {
        for (auto & s : e.slots) {
            if (s.infill) return s;
        }
        throw engine_error("invalid_request", "the engine has no completion slot (open it with completion_slot)");
    }
    if (!key.empty()) {
        for (auto & s : e.slots) {
            if (s.key == key && !s.infill) return s;
        }
    } else if (!background) {
        slot * best = nullptr;
        size_t best_common = 0;
        for (auto & s : e.slots) {
            if (s.infill) continue;
            size_t n = common_prefix(s.tokens, prompt);
            if (n > best_common) {
                best = &s;
                best_common = n;
            }
        }
        if (best && best->key.empty()) return *best;
    }
    slot * victim = nullptr;
    for (auto & s : e.slots) {
        if (s.infill) continue;
        if (s.tokens.empty() && s.key.empty()) return s;
        if (background && !s.background) continue;
        if (!victim || s.last_used < victim->last_used) victim = &s;
    }
    if (!victim) {
        throw engine_error("no_slot", "every slot holds a conversation; background work does not evict one");
    }
    return *victim;
}

void share_prefix(llama_lsp_engine & e, slot & target, const std::vector<llama_token> & prompt, size_t limit) {
    if (!e.can_trim || target.infill) {
        return;  // the completion slot keeps its own cells, and its requests reuse only those (match)
    }
    const size_t own = e.reusable(prompt, target.tokens, limit, e.exact_reuse);
    // llama.cpp writes a copied stream's cells at the next llama_decode; until then the stream holds
    // its old cells under the donor's positions, and a save would write those. So a copy is always
    // followed by a decode: a warm request that another slot holds whole still reads its last chunk.
    const size_t copy_limit = prompt.empty() ? 0 : std::min(limit, prompt.size() - 1);
    slot * donor = nullptr;
    size_t from_donor = own;
    for (auto & s : e.slots) {
        if (&s == &target || s.infill) continue;
        size_t n = e.reusable(prompt, s.tokens, copy_limit, e.exact_reuse);
        if (n > from_donor) {
            donor = &s;
            from_donor = n;
        }
    }
    const saved_slot * from_disk = nullptr;
    size_t disk_common = std::max(own, from_donor);
    for (const auto & saved : e.saved) {
        size_t n = e.reusable(prompt, saved.tokens, limit, e.exact_reuse);
        bool named_for_it = !target.key.empty() && saved.key == target.key && own == 0;
        if (n > disk_common || (named_for_it && n > 0 && n >= disk_common)) {
            from_disk = &saved;
            disk_common = n;
        }
    }
    if (from_disk && disk_common > std::max(own, from_donor)) {
        saved_slot saved = *from_disk;
        e.saved.erase(e.saved.begin() + (from_disk - e.saved.data()));  // a file that fails once fails again
        e.clear_slot(target);
        load_saved_slot(e, target, saved);  // on failure the prompt is evaluated cold
        return;
    }
    if (donor && from_donor > own) {
        // Slots live in separate streams, so the copy is of the donor's whole stream (a memcpy at
        // the next decode), then trimmed to the shared prefix.
        e.clear_slot(target);
        llama_memory_seq_cp(e.memory(), donor->id, target.id, -1, -1);
        target.tokens = donor->tokens;
        e.trim_slot(target, from_donor);
    }
}

}  // namespace llama_lsp
