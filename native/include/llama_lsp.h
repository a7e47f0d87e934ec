/*
 * llama_lsp.h: the only public interface of libllama_lsp_native.
 *
 * A small C API over llama.cpp that speaks JSON strings, so the fast-changing C++ API stays behind a
 * stable boundary. lsp_server/engine/native.py reads this file as its cffi declarations (ABI mode), so
 * it holds plain C declarations only: no macros, no includes, no preprocessor lines.
 *
 * Conventions
 *  - Strings in and out are UTF-8 and NUL-terminated, except the streamed pieces (pointer + length).
 *  - JSON in (options, requests) must be one JSON object. Unknown keys are ignored; leave a key out
 *    rather than send null; a value of the wrong type is an "invalid_request" error.
 *  - Ownership: every function that returns char * returns a JSON object allocated by the library;
 *    the caller owns it and must release it with llama_lsp_free_string (never free()). On failure it
 *    is an error object (below). It is NULL only if the library could not allocate the string.
 *    Strings passed in are only read during the call; the library keeps no pointer to them.
 *  - No C++ exception crosses this boundary. Callbacks must not throw or longjmp through it either.
 *  - Threads: an engine is used by one thread at a time. A second call that arrives while one runs is
 *    not queued: it returns a "busy" error at once. llama_lsp_cancel, llama_lsp_yield and
 *    llama_lsp_clear_cancel are the exception: any thread may call them at any time while the engine is open. Separate engines may be
 *    used from separate threads. llama_lsp_close must not overlap any other call on its engine.
 *
 * Error objects: {"error": {"type": <one of the types below>, "message": <text for people>}}.
 *   invalid_request   malformed JSON, a key of the wrong type or value, an unknown tool, a prompt that
 *                     renders to nothing, a template that fails on the messages; NULL arguments
 *   busy              another call on this engine is running (nothing was done)
 *   context_overflow  the prompt has at least as many tokens as a slot holds (option n_ctx)
 *   decode_failed     llama.cpp failed while reading the prompt; the slot is cleared, the engine serves on
 *   no_slot           a "background" request found every slot held by a conversation (nothing was done)
 *   io                save_slots could not write a file (disk full, permissions); its temporary is removed
 *   out_of_memory     an allocation failed
 *   internal          anything else: a bug, or a filesystem error outside the checked paths
 * llama_lsp_open only:
 *   model_not_found   model_path is not a regular file
 *   model_load        llama.cpp could not load the model, or the model's chat template
 *   context           llama.cpp could not create the context (n_ctx x n_slots too large for memory?)
 * lsp_server/engine/native.py maps each type to a NativeError subclass (model_not_found and context
 * become ModelLoadError; io, out_of_memory and internal stay NativeError with that kind).
 */

/* The version of this interface. The library and lsp_server/engine/native.py must agree on it:
   native.py checks it when it loads the library and refuses another version with an error that says
   to rebuild (`make setup`), instead of failing later in a confusing way. Bump it with every change to
   this file that a caller relies on: a function, its arguments, a key or its meaning. */
enum { LLAMA_LSP_ABI_VERSION = 4 };

/* The interface version the library was built with (LLAMA_LSP_ABI_VERSION of its header). Thread-safe;
   may be called before anything else. */
int llama_lsp_abi_version(void);

typedef struct llama_lsp_engine llama_lsp_engine;

/* Receives each streamed piece of answer text during llama_lsp_generate, on the thread that called it:
   whole UTF-8 characters, not NUL-terminated, valid only during the callback. The pieces add up to a
   prefix of the result's "content" (to all of it when the answer ends with "stop", "length" or
   "tool_calls"); no piece holds any part of a stop string or, with tools, of a tool call.
   Return 0 to go on, non-zero to stop the generation (it then finishes as "cancelled").
   It must not call other functions on the engine (they would get "busy"), except llama_lsp_cancel. */
typedef int (*llama_lsp_piece_cb)(void * user_data, const char * text, int length);

/* Receives llama.cpp's log lines (level: 1 debug, 2 info, 3 warn, 4 error) and the engine's own
   warnings (level 3), on whichever thread logs. The errors llama.cpp logs while it unwinds a cancelled
   decode arrive as debug. text is NUL-terminated, usually ends with a newline, and is valid only
   during the callback. */
typedef void (*llama_lsp_log_cb)(void * user_data, int level, const char * text);

/* The library's version and build ("0.1.0 (ABI 4; llama.cpp: <where its source came from>, source <hash>)"),
   as a static string owned by the library: do not free it. Thread-safe. */
const char * llama_lsp_version(void);

/* Routes llama.cpp's log and the engine's warnings to the callback, process-wide; NULL silences them.
   Also initializes llama.cpp's backend (once per process). Call it before opening engines: the
   callback and user_data are two separate atomics, so a line logged while they change may reach the
   new callback with the old user_data. */
void llama_lsp_set_log_callback(llama_lsp_log_cb callback, void * user_data);

/* Loads a model (GGUF file at model_path) and creates its context and slots.
   options_json: a JSON object, or NULL for {}; every key is optional:
     "n_ctx"            tokens per slot (default 8192, at least 64); each slot has its own KV stream,
                        so the context holds n_ctx x n_slots cells
     "n_slots"          conversations cached at once (default 4, clamped to 1..64)
     "n_threads"        threads for decoding one token (default 0: half the cores, at most 4)
     "n_threads_batch"  threads for reading a prompt (default 0: as n_threads)
     "prefill_chunk"    prompts are evaluated in chunks that start before each token that opens a chat
                        message (info's "message_start") and are at most this many tokens long
                        (default 64, clamped to 1..2048; llama.cpp's batch is max(512, prefill_chunk))
     "exact_reuse"      true (default): reuse a cached prefix only up to a chunk boundary (where a cold
                        run would cut the prompt too) and drop the cells written while answering, so that
                        a greedy answer is the same whatever the cache held; false: reuse the whole
                        common prefix, answer included, and read prompts in llama.cpp-batch-sized
                        chunks (faster, not bit-exact)
     "speculative"      true (default): answers are written with speculative decoding, drafts taken from
                        the request's own tokens by llama.cpp's n-gram drafter and verified in one batch
                        (greedy answers are the same as without, up to float near-ties between a batch
                        and one-token evaluations); a request's "speculative" overrides it
     "cache_key"        a string naming the model file (e.g. a hash of its path, size and mtime); part of
                        the fingerprint of saved slots, so that a changed file invalidates them
     "n_gpu_layers"     layers to offload to a GPU backend, if the library was built with one (default 0)
     "flash_attn"       "on", "off" or "auto" (llama.cpp decides); default "off" without offloaded
                        layers (llama.cpp's CPU kernel for it is slower at reading a few tokens and at
                        decoding over a long cache), else "auto". Part of the fingerprint of saved slots
     "completion_slot"  true: one more slot, for "fim" requests only, when the model has FIM tokens
                        (default false); it reuses the longest common prefix, answer included (not
                        exact), reads prompts in chunks of prefill_chunk tokens, and is never shared,
                        saved or evicted for other requests
   Returns a handle, owned by the caller until llama_lsp_close. On failure returns NULL and, if
   error_json is not NULL, sets *error_json to an error object (free it with llama_lsp_free_string);
   on success sets *error_json to NULL. Thread-safe with respect to other engines. */
llama_lsp_engine * llama_lsp_open(const char * model_path, const char * options_json, char ** error_json);

/* Runs one completion. request_json is a JSON object:
     "messages"             a non-empty array of OpenAI-style chat messages ({"role", "content"}, and
                            "tool_calls" / "tool_call_id" for tool turns), rendered with the model's chat
                            template (Jinja), with the generation prompt added and thinking off
     "prompt"               instead of messages: raw text, tokenized as is (special tokens parsed, BOS
                            added if the model uses one), no template; the answer is plain content;
                            wins over "messages"
     "fim"                  instead of both: fill in the middle, in the completion slot (see
                            "completion_slot"), with the model's own FIM tokens ("invalid_request" when it
                            has none): {"prefix" (the lines above the cursor), "prompt" (the cursor's
                            line up to it), "suffix" (the text after the cursor), "filename", "repo",
                            "extra": [{"filename", "text"}] (other files, before the rest, where the
                            model has repository-level tokens)}; user text never becomes special tokens;
                            the answer is plain content; wins over "prompt" and "messages"
     "tools"                OpenAI-style tool declarations ({"type": "function", "function": {"name",
                            "description", "parameters"}}); calls are constrained by the template's grammar
     "tool_choice"          "auto" (default), "required" (the template's tool-call opener is written at the
                            start of the answer, so the answer is a call) or "none"
     "allowed_tools"        a non-empty array of declared tool names: only these may be called; the prompt
                            still declares every tool, so its prefix stays cacheable across requests
     "parallel_tool_calls"  false (default) keeps only the first call; true keeps them all
     "max_tokens"           answer tokens at most (default 512, must be > 0; capped at what the slot has left)
     "temperature"          0 (default) is greedy; "top_k" (40), "top_p" (0.95) and "seed" (0) apply above 0
     "stop"                 an array of strings; the answer ends before the first one that appears (empty
                            strings are ignored; the template's own stop strings apply as well)
     "slot"                 the conversation key: requests with the same key come back to the same slot.
                            "" or missing: the unnamed slot holding the longest common prefix, else a free
                            or the least recently used one
     "warm"                 true: only fill the cache: the messages are rendered without the generation
                            prompt (or the raw prompt taken as is) and evaluated, nothing is answered; the
                            result has empty content and "finish_reason" "stop" (or "cancelled": the chunks
                            read until then stay cached)
     "continue_answer"      true: the last message is the start of the assistant's answer (text, no tool
                            calls), which the model continues (llama.cpp's continue_final_message); the
                            result's "content" is the whole answer, that start included, and its "tokens"
                            the ones written after it ("invalid_request" when the last message is not the
                            assistant's)
     "background"           true: the request may take only a free slot or one that background requests
                            used last, never evict a conversation's ("no_slot" error otherwise)
     "speculative"          true or false: draft or not (default: the engine's "speculative"); never for
                            "fim" requests, nor for models whose memory cannot drop a rejected draft
     "debug_draft"          benchmarks and tests only: {"type" ("ngram-simple" (default), "ngram-mod",
                            "ngram-map-k"), "n_max" (tokens per draft), "n_min", "n_match" (context a draft
                            follows), "adaptive" (pause after rejected drafts), "spoil_after" (draft tokens
                            from this index on are replaced, so that the model rejects them)}
     "debug_fail_prefill_after_chunks"  tests only: k; prompt chunk number k (from 0) goes into the
                            cache, then the call fails with "decode_failed" as if llama.cpp had failed
     "debug_cancel_prefill_after_chunks"  tests only: k; a cancel arrives as soon as k chunks of the
                            prompt have gone into the cache
   Streams the answer through on_piece (may be NULL; user_data is passed to it as is).
   Returns {"content": text, "tool_calls": [{"id", "name", "arguments": object, or the model's text when
   it is not JSON}], "finish_reason": "stop" | "length" | "tool_calls" | "cancelled" | "error",
   "error_message" (only with "error": llama.cpp failed while answering; the slot is cleared),
   "tokens": [the answer's token ids], "stats": {"n_prompt", "n_common" (prompt tokens the cache held),
   "n_reused" (kept without evaluation), "n_evaluated", "n_generated", "n_drafted" (tokens drafted),
   "n_accepted" (drafted tokens the model agreed with), "t_match_ms", "t_prefill_ms",
   "t_first_token_ms", "t_decode_ms", "slot" (the slot's index)}}, or an error object.
   A cancelled call returns a result, not an error, and keeps the prompt's chunks read before the cancel
   in the slot (a later request continues from them). Whatever happens, the slot's cache never falls out
   of step with its record: what cannot be vouched for is cleared. */
char * llama_lsp_generate(llama_lsp_engine * engine, const char * request_json,
                          llama_lsp_piece_cb on_piece, void * user_data);

/* Asks the running generate call to stop soon (llama.cpp's running decode is aborted); called before
   generate starts, it stops that call at once. A generate call that ends forgets the cancel.
   Thread-safe, never blocks; NULL is ignored. */
void llama_lsp_cancel(llama_lsp_engine * engine);

/* Asks the running generate call to stop reading its prompt at the next chunk boundary: it then ends
   as "cancelled" with every chunk read so far cached, and no work is lost (a background request making
   way for another). Answering is not interrupted. A generate call that ends forgets it, as it forgets a
   cancel. Thread-safe, never blocks; NULL is ignored. */
void llama_lsp_yield(llama_lsp_engine * engine);

/* Forgets a cancel (or yield) that no generate call has consumed yet (one that came after the call it was meant
   for had ended), so that it cannot stop the next call. Thread-safe, never blocks; NULL is ignored. */
void llama_lsp_clear_cancel(llama_lsp_engine * engine);

/* Tokenizes {"text", "add_special" (default false), "parse_special" (default false)} and returns
   {"tokens": [...]}; or renders and tokenizes a generate request ({"messages", "tools", ...} or
   {"prompt"}, exactly as generate would) and returns {"tokens", "prompt" (the rendered text), "format"
   (the template's chat format), "generation_prompt", "grammar_lazy", "grammar_triggers": [{"type",
   "value"}], "preserved_tokens", "additional_stops"}. Touches no slot. */
char * llama_lsp_tokenize(llama_lsp_engine * engine, const char * request_json);

/* Saves every slot's state and tokens under directory (created if missing), keeping the slots saved
   there earlier and not loaded since (at most twice the slot count in all). Files are written through
   a temporary and a rename; a failed write removes its temporary file and returns an "io" error.
   Returns {"saved": n} (slots listed in the directory's index.json). */
char * llama_lsp_save_slots(llama_lsp_engine * engine, const char * directory);

/* Remembers the slots saved under directory; each is loaded lazily, when a request would reuse it.
   The files are untrusted: an entry naming anything but a state file inside directory, listing tokens
   that are not the model's or do not fit a slot, or whose file is not a regular file of a sane size is
   ignored (counted in "ignored"); a state file that fails to load is deleted and its prompt evaluated
   cold. State saved for another model or build, or a corrupt index, is discarded (its files deleted,
   the reason in "discarded"). Returns {"known": n, "ignored": m (only if m > 0), "discarded": why (only
   if discarded)}. A directory without index.json gives {"known": 0}. */
char * llama_lsp_restore_slots(llama_lsp_engine * engine, const char * directory);

/* Describes the model, the context and the slots: {"version", "model_path", "model_desc", "n_params",
   "model_size", "n_ctx" (all slots), "n_ctx_slot", "n_ctx_train", "n_threads", "n_threads_batch",
   "prefill_chunk", "message_start" (the token that starts a chunk, or -1), "exact_reuse", "speculative", "flash_attn",
   "can_reuse" (false for recurrent or hybrid models: every request starts cold), "can_infill" (the
   vocabulary has FIM tokens), "slots": [{"id", "key", "n_tokens", "last_used", "completion" (the
   completion slot)}], "n_saved" (slots known on disk, not loaded yet), "fingerprint"}. */
char * llama_lsp_info(llama_lsp_engine * engine);

/* Drops every slot's cache and key and forgets restorable saved slots (the next request is evaluated
   cold; the files stay on disk until the next save). Returns {"cleared": n} (slots that held tokens). */
char * llama_lsp_clear(llama_lsp_engine * engine);

/* Releases a string returned by this library; NULL is allowed. Thread-safe. */
void llama_lsp_free_string(char * text);

/* Frees the engine, its context and its model; NULL is allowed. No other call on the engine may be
   running or follow. Slots are not saved: call llama_lsp_save_slots first to keep them. */
void llama_lsp_close(llama_lsp_engine * engine);

/* ---- The engine's text functions, on their own ------------------------------------------------------ */

/* Runs one of the engine's pure text functions, for the tests: tests/test_native_text.py checks them
   without a model, and tests/test_tool_calls.py checks that lsp_server/engine/tool_calls.py (the same
   tool-call rules in Python, for the remote engine) agrees with "tool_call_start" and
   "extract_json_call".
   text is length bytes (any bytes: NUL and unfinished UTF-8 allowed). args_json is a JSON object or
   NULL for {}; its string lists default to []. The functions, their args and what they return:
     "utf8_complete_prefix"  {}                         {"n": bytes of text that end on a whole character}
     "stop_overlap"          {"stops"}                  {"n": trailing bytes that may start a stop string}
     "tool_call_start"       {"openers", "tool_names"}  {"n": where a tool call may begin, else length}
     "extract_json_call"     {"tool_names"}             {"found": false}, or {"found": true, "name",
                                                        "arguments" (JSON text), "rest" (text without it)}
     "stream"                {"cuts": [byte offsets], "stops", "tools" (bool), "openers", "tool_names",
                             "final" (optional)}: {"pieces": [what the streamer sent while the answer
                             grew to text[0:cut] for each cut, then ended with "final" as its content]}
   Returns the result or an error object ("invalid_request" for an unknown function); free it with
   llama_lsp_free_string. Thread-safe. */
char * llama_lsp_test_text(const char * function, const char * text, int length, const char * args_json);
