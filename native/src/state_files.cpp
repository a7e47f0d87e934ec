// state_files.cpp: slots saved to a directory and restored from it, lazily.
//
// Whoever can write to the state directory controls index.json and the state files, so nothing in them
// is trusted: a file is looked up only by a name of ours inside the directory, only a regular file of a
// bounded size is opened, and a loaded state must hold exactly the tokens its index entry lists.

#include "engine.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

using namespace llama_lsp;
namespace fs = std::filesystem;

std::string llama_lsp_engine::fingerprint() const {
    char desc[256] = {0};
    llama_model_desc(model, desc, sizeof(desc));
    return std::string("llama-lsp ") + k_version + "; llama.cpp " + LLAMA_LSP_SOURCE_ID + "; " + desc + "; params " +
           std::to_string(llama_model_n_params(model)) + "; size " + std::to_string(llama_model_size(model)) +
           "; key " + cache_key + "; cuts " + std::to_string(prefill_chunk) + "/" + std::to_string(message_start) +
           (exact_reuse ? " exact" : " fast") + "; flash attention " + flash_attn;
}

namespace {

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

}  // namespace

namespace llama_lsp {

// The file may have changed since its index was read, so it is checked again, and the cells must hold
// exactly the listed tokens, at positions 0..n-1.
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
        if (!s.tokens.empty() && !s.infill) live.push_back(&s);  // typing's cache is not worth a file
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

}  // namespace llama_lsp
