// text.cpp: the engine's pure text functions: UTF-8 completion, stop-string overlap, JSON tool calls
// written without the template's markup, and the streamer that decides which text may be sent yet.
//
// Nothing here touches llama.cpp's state, so tests/test_native_text.py checks it all without a model,
// through llama_lsp_test_text. The JSON tool-call rules (extract_json_call, and tool_call_start without
// openers) exist again in Python for the remote engine, lsp_server/engine/tool_calls.py: change both
// together; tests/test_tool_calls.py runs both on the same cases.

#include "engine.h"

#include <algorithm>

namespace llama_lsp {

namespace {

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

}  // namespace

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

std::string trim(const std::string & s) {
    size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos) return "";
    size_t b = s.find_last_not_of(" \t\r\n");
    return s.substr(a, b - a + 1);
}

piece_streamer::piece_streamer(llama_lsp_piece_cb cb, void * user_data, std::vector<std::string> stops,
                               bool with_tools, std::vector<std::string> openers,
                               std::vector<std::string> tool_names)
    : cb_(cb),
      user_data_(user_data),
      stops_(std::move(stops)),
      with_tools_(with_tools),
      openers_(std::move(openers)),
      tool_names_(std::move(tool_names)) {}

bool piece_streamer::update(const std::string & raw, const std::string * final_content) {
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
            limit = std::min(limit, tool_call_start(visible, openers_, tool_names_));
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

}  // namespace llama_lsp
