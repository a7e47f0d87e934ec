/*
 * llama_lsp.h: the only public interface of libllama_lsp_native.
 *
 * A small C API over llama.cpp that speaks JSON strings, so the fast-changing C++ API stays behind a
 * stable boundary. lsp_server/native.py reads this file as its cffi declarations (ABI mode), so it
 * holds plain C declarations only: no macros, no includes, no preprocessor lines.
 *
 * Conventions:
 *  - Every function that returns char * returns a JSON object allocated by the library; release it
 *    with llama_lsp_free_string. It is {"error": {"type": ..., "message": ...}} on failure.
 *  - No C++ exception crosses this boundary.
 *  - An engine is used by one thread at a time, except llama_lsp_cancel, which any thread may call.
 */

typedef struct llama_lsp_engine llama_lsp_engine;

/* Receives each streamed piece of answer text: whole UTF-8 characters, not NUL-terminated.
   Return 0 to go on, non-zero to stop the generation (it then finishes as "cancelled"). */
typedef int (*llama_lsp_piece_cb)(void * user_data, const char * text, int length);

/* Receives llama.cpp's log lines (level: 1 debug, 2 info, 3 warn, 4 error). */
typedef void (*llama_lsp_log_cb)(void * user_data, int level, const char * text);

/* The library's version and build (llama.cpp commit), as a static string; do not free. */
const char * llama_lsp_version(void);

/* Routes llama.cpp's log to the callback (process-wide); NULL silences it. */
void llama_lsp_set_log_callback(llama_lsp_log_cb callback, void * user_data);

/* Loads a model and creates its context. options_json: {"n_ctx" (tokens per slot; each slot has its
   own KV stream), "n_threads", "n_threads_batch", "n_slots", "prefill_chunk", "exact_reuse",
   "cache_key"}; all optional.
   Returns a handle, or NULL with *error_json set to an error object (free it). */
llama_lsp_engine * llama_lsp_open(const char * model_path, const char * options_json, char ** error_json);

/* Runs one chat completion. request_json: {"messages", "tools", "tool_choice", "parallel_tool_calls",
   "allowed_tools", "max_tokens", "temperature", "top_k", "top_p", "seed", "stop", "slot"} or
   {"prompt": raw text, ...}. allowed_tools restricts which declared tools the answer may call.
   Streams content through on_piece (may be NULL). Returns {"content", "tool_calls", "finish_reason",
   "tokens", "stats"} or an error object. */
char * llama_lsp_generate(llama_lsp_engine * engine, const char * request_json,
                          llama_lsp_piece_cb on_piece, void * user_data);

/* Asks the running generate call to stop soon; called before generate starts, it stops that call at
   once. A generate call that ends forgets the cancel. Thread-safe. */
void llama_lsp_cancel(llama_lsp_engine * engine);

/* Forgets a cancel that no generate call has consumed yet (one that came after the call it was meant
   for had ended), so that it cannot stop the next call. Thread-safe. */
void llama_lsp_clear_cancel(llama_lsp_engine * engine);

/* Tokenizes {"text", "add_special", "parse_special"} or renders and tokenizes a chat request
   ({"messages", "tools", ...} as for generate). Returns {"tokens": [...], "prompt": text}. */
char * llama_lsp_tokenize(llama_lsp_engine * engine, const char * request_json);

/* Saves every slot's state and tokens under directory (created if missing), keeping the slots saved
   there earlier and not loaded since (at most twice the slot count in all). A failed write removes its
   temporary file and returns an "io" error. Returns {"saved": n}. */
char * llama_lsp_save_slots(llama_lsp_engine * engine, const char * directory);

/* Remembers the slots saved under directory; each is loaded lazily, when a request would reuse it.
   The files are untrusted: an entry naming anything but a state file inside directory, listing tokens
   that are not the model's or do not fit a slot, or whose file is not a regular file of a sane size is
   ignored (counted in "ignored"); a state file that fails to load is deleted and its prompt evaluated
   cold. State saved for another model or build, or a corrupt index, is discarded. Returns {"known": n}. */
char * llama_lsp_restore_slots(llama_lsp_engine * engine, const char * directory);

/* Describes the model, the context and the slots. */
char * llama_lsp_info(llama_lsp_engine * engine);

/* Drops every slot's cache and forgets restorable saved slots (the next request is evaluated cold).
   Returns {"cleared": n}. */
char * llama_lsp_clear(llama_lsp_engine * engine);

void llama_lsp_free_string(char * text);

/* Frees the engine; NULL is allowed. */
void llama_lsp_close(llama_lsp_engine * engine);
