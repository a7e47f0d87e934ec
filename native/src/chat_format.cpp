// chat_format.cpp: requests rendered through the model's chat template, tool calls constrained by its
// grammar, answers split by its parser.
//
// This is the part of llama.cpp's API that changes most often (common/chat.h): every use of it stays in
// this file. llama.cpp reports bad messages, tools and templates by throwing; those exceptions become
// "invalid_request" errors here, and a parser that fails degrades to plain content.

#include "engine.h"

#include <algorithm>

namespace llama_lsp {

namespace {

common_chat_tool_choice parse_tool_choice(const json & request) {
    std::string choice = get_or<std::string>(request, "tool_choice", "auto");
    if (choice == "auto") return COMMON_CHAT_TOOL_CHOICE_AUTO;
    if (choice == "required") return COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    if (choice == "none") return COMMON_CHAT_TOOL_CHOICE_NONE;
    throw engine_error("invalid_request", "tool_choice must be auto, required or none");
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

}  // namespace

llama_token message_start_token(llama_lsp_engine & e) {
    common_chat_templates_inputs inputs;
    common_chat_msg probe;
    probe.role = "user";
    probe.content = "x";
    inputs.messages = {probe};
    inputs.add_generation_prompt = true;
    inputs.use_jinja = true;
    inputs.enable_thinking = false;
    std::string generation_prompt;
    try {
        generation_prompt = common_chat_templates_apply(e.templates.get(), inputs).generation_prompt;
    } catch (const std::exception & ex) {
        log_warning("llama-lsp: the chat template failed on a probe (%s); prompts are cut every %d tokens\n",
                    ex.what(), e.prefill_chunk);
        return LLAMA_TOKEN_NULL;
    }
    auto tokens = common_tokenize(e.vocab, generation_prompt, /*add_special=*/false, /*parse_special=*/true);
    if (tokens.empty() || !(llama_vocab_get_attr(e.vocab, tokens[0]) & LLAMA_TOKEN_ATTR_CONTROL)) {
        return LLAMA_TOKEN_NULL;
    }
    return tokens[0];
}

std::string tool_call_opener(const common_chat_params & chat) {
    for (const auto & trigger : chat.grammar_triggers) {
        if (trigger.type == COMMON_GRAMMAR_TRIGGER_TYPE_WORD && !trigger.value.empty()) {
            return trigger.value;
        }
    }
    return "";
}

prepared_prompt prepare(llama_lsp_engine & e, const json & request) {
    prepared_prompt p;
    p.warm = get_or<bool>(request, "warm", false);
    if (request.contains("fim")) {
        p.is_infill = true;
        p.tokens = infill_tokens(e.vocab, request["fim"]);
        p.text = common_detokenize(e.vocab, p.tokens, /*special=*/true);
        return p;
    }
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
        inputs.add_generation_prompt = !p.warm;
        if (get_or<bool>(request, "continue_answer", false) && !p.warm) {
            // The last message is the start of the answer, which the model continues (llama-server's
            // assistant prefill, with the template's own rendering of it).
            if (inputs.messages.back().role != "assistant" || !inputs.messages.back().tool_calls.empty()) {
                throw engine_error("invalid_request", "continue_answer: the last message must be the assistant's text");
            }
            inputs.continue_final_message = COMMON_CHAT_CONTINUATION_AUTO;
            inputs.add_generation_prompt = false;
            p.continued = inputs.messages.back().content;
        }
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
        if (inputs.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED && !p.warm) {
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

}  // namespace llama_lsp
