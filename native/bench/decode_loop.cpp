// decode_loop.cpp: llama.cpp's plain generation loop, the baseline for `make bench` (decode speed).
//
// Loads a model, evaluates a prompt read from a file in one batch, then samples greedily and feeds
// each token back with a one-token llama_decode, using only llama.h. Decode time is measured the way
// the engine measures it: from the end of the prompt evaluation to the last sampled token.
//
//     llama_lsp_decode_loop MODEL PROMPT_FILE N_PREDICT N_THREADS [N_THREADS_BATCH [FLASH_ATTN]]
//
// Prints {"n_prompt", "n_generated", "decode_s", "tokens"} as JSON on stdout.

#include "llama.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void quiet_log(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static int fail(const char * message) {
    fprintf(stderr, "decode_loop: %s\n", message);
    return 1;
}

int main(int argc, char ** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL PROMPT_FILE N_PREDICT N_THREADS [N_THREADS_BATCH [FLASH_ATTN]]\n", argv[0]);
        return 2;
    }
    const int n_predict = std::stoi(argv[3]);
    const int n_threads = std::stoi(argv[4]);
    const int n_threads_batch = argc > 5 ? std::stoi(argv[5]) : n_threads;
    // on, off or auto: the engine's own setting (its info's "flash_attn"), so that only the loop differs
    const std::string flash_attn = argc > 6 ? argv[6] : "auto";
    std::ifstream file(argv[2], std::ios::binary);
    if (!file) return fail("cannot read the prompt file");
    std::stringstream text;
    text << file.rdbuf();
    const std::string prompt = text.str();

    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fail("cannot load the model");
    const llama_vocab * vocab = llama_model_get_vocab(model);

    // Same tokenization as the engine: special tokens added and parsed.
    const int n_prompt = -llama_tokenize(vocab, prompt.data(), (int32_t) prompt.size(), nullptr, 0, true, true);
    std::vector<llama_token> tokens(n_prompt);
    if (n_prompt <= 0 ||
        llama_tokenize(vocab, prompt.data(), (int32_t) prompt.size(), tokens.data(), n_prompt, true, true) < 0) {
        return fail("cannot tokenize the prompt");
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) (n_prompt + n_predict);
    cp.n_batch = (uint32_t) n_prompt;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads_batch;
    cp.flash_attn_type = flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                               : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.no_perf = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) return fail("cannot create the context");
    llama_sampler * sampler = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(sampler, llama_sampler_init_greedy());

    if (llama_decode(ctx, llama_batch_get_one(tokens.data(), n_prompt)) != 0) return fail("prompt decode failed");

    using clock = std::chrono::steady_clock;
    const auto t_start = clock::now();
    std::vector<llama_token> generated;
    while (true) {
        llama_token token = llama_sampler_sample(sampler, ctx, -1);
        if (llama_vocab_is_eog(vocab, token)) break;
        generated.push_back(token);
        if ((int) generated.size() >= n_predict) break;
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) return fail("decode failed");
    }
    const double decode_s = std::chrono::duration<double>(clock::now() - t_start).count();

    printf("{\"n_prompt\": %d, \"n_generated\": %zu, \"decode_s\": %.6f, \"tokens\": [", n_prompt,
           generated.size(), decode_s);
    for (size_t i = 0; i < generated.size(); i++) {
        printf(i ? ", %d" : "%d", generated[i]);
    }
    printf("]}\n");

    llama_sampler_free(sampler);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
