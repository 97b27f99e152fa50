/*
 * gguf_vocab.c - a tokenizer from GGUF metadata (tokenizer.ggml.*): the
 * model ("llama" = SentencePiece BPE, "gpt2" = byte-level BPE, "gemma4" =
 * SentencePiece-style BPE), pieces, scores, token types, merges, the
 * pre-tokenizer name, special ids and add_bos / add_space_prefix.
 *
 * "gemma4" is what llama.cpp's converter writes for Gemma 4 (its
 * tokenizer.json is a BPE over characters: normalizer Replace " " -> "▁",
 * no pre-tokenizer, byte_fallback with <0xNN> pieces). The GGUF has the
 * pieces as they are in tokenizer.json, the merges as "left right" and
 * token types (BYTE for <0xNN>, USER_DEFINED for added pieces, which are
 * split out before BPE as `tokenizers` splits added tokens). wick runs it
 * as it runs that tokenizer.json: spaces escaped, no prefix space (unless
 * tokenizer.ggml.add_space_prefix), merges by rank over characters, byte
 * fallback. llama.cpp (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GEMMA4)
 * also splits the text at newlines first and takes a run of newlines
 * whole when it is a piece; wick keeps the tokenizer.json behaviour (no
 * split), which differs from llama.cpp's only where a merge joins a
 * newline to other text, or a run of newlines is a NORMAL piece the merges
 * do not build (USER_DEFINED pieces are split out first by both). Like
 * llama.cpp, wick adds BOS for "gemma4" even when
 * tokenizer.ggml.add_bos_token says false (Gemma 4 needs it; transformers'
 * post-processor adds it).
 *
 * A GGUF carries no normalizer. Pre-tokenizer "qwen2" names the tokenizer
 * of Qwen 1.5, 2, 2.5 and 3 (llama.cpp's converter picks it by hashing
 * that tokenizer's output), whose tokenizer.json (transformers'
 * Qwen2Tokenizer) normalizes to NFC before splitting; wick does the same,
 * so the GGUF tokenizes as the model's own tokenizer does. llama.cpp and
 * transformers' GGUF import skip the NFC step, and differ from the model's
 * tokenizer on text that is not already NFC (decomposed accents, Hangul
 * jamo, some CJK compatibility ideographs).
 */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

static enum wk_status get_id(const struct wk_gguf *g, const char *key, int32_t n_vocab,
                             int32_t *out, struct wk_error *err)
{
    if (!wk_gguf_find(g, key)) return WK_OK;
    uint32_t v;
    enum wk_status st = wk_gguf_get_u32(g, key, &v, err);
    if (st) return st;
    if (v >= (uint32_t)n_vocab)
        return wk_error_set(err, WK_E_FORMAT, "%s: %s = %u is outside the vocabulary (%d tokens)",
                            wk_gguf_path(g), key, v, n_vocab);
    *out = (int32_t)v;
    return WK_OK;
}

static enum wk_status load_pieces(struct wk_tokenizer *tok, const struct wk_gguf *g,
                                  struct wk_error *err)
{
    const char *path = wk_gguf_path(g);
    const struct wk_gguf_value *tokens, *scores = NULL, *types = NULL;
    enum wk_status st;
    if ((st = wk_gguf_get_arr(g, "tokenizer.ggml.tokens", WK_GGUF_STRING, &tokens, err))) return st;
    if (tokens->arr.n == 0 || tokens->arr.n > (1u << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries", path,
                            (unsigned long long)tokens->arr.n);
    int32_t n = (int32_t)tokens->arr.n;
    if (wk_gguf_find(g, "tokenizer.ggml.scores")) {
        if ((st = wk_gguf_get_arr(g, "tokenizer.ggml.scores", WK_GGUF_F32, &scores, err))) return st;
        if (scores->arr.n != tokens->arr.n)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tokenizer.ggml.scores has %llu entries, tokens has %d", path,
                                (unsigned long long)scores->arr.n, n);
    }
    if (wk_gguf_find(g, "tokenizer.ggml.token_type")) {
        if ((st = wk_gguf_get_arr(g, "tokenizer.ggml.token_type", WK_GGUF_I32, &types, err)))
            return st;
        if (types->arr.n != tokens->arr.n)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tokenizer.ggml.token_type has %llu entries, tokens has %d",
                                path, (unsigned long long)types->arr.n, n);
    }
    if (wk__vocab_begin(tok, n)) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    char run[512];
    for (int32_t i = 0; i < n; i++) {
        struct wk_gguf_str s = tokens->arr.strs[i];
        int64_t ty = types ? wk_gguf_arr_i64(types, (uint64_t)i) : WK_TOKEN_NORMAL;
        if (ty < WK_TOKEN_NORMAL || ty > WK_TOKEN_BYTE)
            return wk_error_set(err, WK_E_FORMAT, "%s: token %d has unknown type %lld", path, i,
                                (long long)ty);
        float score = scores ? (float)wk_gguf_arr_f64(scores, (uint64_t)i) : 0.0f;
        bool spaces = s.len > 0 && s.len <= 64;
        for (uint64_t k = 0; k < s.len && spaces; k++) spaces = s.data[k] == ' ';
        if (tok->model == WK_TOKENIZER_WPM && s.len + 2 < sizeof run) {
            /* llama.cpp's BERT vocabulary: word-initial pieces carry a
             * leading '▁', continuation pieces none; back to WordPiece's
             * own spelling, "##" on continuations (wordpiece.c) */
            size_t len = wk__wpm_piece_from_gguf(s.data, (size_t)s.len, ty == WK_TOKEN_NORMAL, run);
            st = wk__vocab_set(tok, i, run, len, (enum wk_token_type)ty, score);
        } else if (tok->model == WK_TOKENIZER_SPM && ty == WK_TOKEN_USER_DEFINED && spaces) {
            /* Runs of spaces marked user-defined in SentencePiece GGUFs
             * (Gemma) are ordinary pieces of the escaped text to Hugging
             * Face `tokenizers` (its GGUF import writes them as "▁▁..." and
             * does not split them out first). wick follows it, so 32 spaces
             * become 16 + 16 as there, not 31 + 1 as llama.cpp splits them. */
            for (uint64_t k = 0; k < s.len; k++) memcpy(run + 3 * k, "\xe2\x96\x81", 3);
            st = wk__vocab_set(tok, i, run, (size_t)(3 * s.len), WK_TOKEN_NORMAL, score);
        } else {
            st = wk__vocab_set(tok, i, s.data, (size_t)s.len, (enum wk_token_type)ty, score);
        }
        if (st) return wk_error_set(err, st, "%s: out of memory", path);
    }
    if (wk__vocab_finish(tok)) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    return WK_OK;
}

/* The merges of a BPE model (byte-level: pieces in GPT-2 characters;
 * "gemma4": pieces as they are, '▁' for a space); `byte_level` says which
 * and sets up the pre-tokenizer tokenizer.ggml.pre names for byte-level. */
static enum wk_status load_bpe(struct wk_tokenizer *tok, const struct wk_gguf *g, bool byte_level,
                               struct wk_error *err)
{
    const char *path = wk_gguf_path(g);
    char name[64] = "default";
    enum wk_status st;
    if (byte_level && wk_gguf_find(g, "tokenizer.ggml.pre")) {
        struct wk_gguf_str pre;
        if ((st = wk_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err))) return st;
        wk_str_printable(pre.data, (size_t)pre.len, name, sizeof name);
    }
    st = byte_level ? wk__bpe_use_named_pre(tok, name) : WK_OK;
    if (st == WK_E_NOT_FOUND)
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "%s: unknown pre-tokenizer \"%s\" (tokenizer.ggml.pre); wick knows gpt2, "
                            "llama-bpe, qwen2, smollm, starcoder, glm4, falcon and a few others",
                            path, name);
    if (st) return wk_error_set(err, st, "%s: pre-tokenizer %s cannot be set up", path, name);
    if (byte_level && strcmp(name, "qwen2") == 0) tok->unicode_form = WK__FORM_NFC;
    const struct wk_gguf_value *merges;
    if ((st = wk_gguf_get_arr(g, "tokenizer.ggml.merges", WK_GGUF_STRING, &merges, err))) return st;
    if (merges->arr.n > (1u << 24))
        return wk_error_set(err, WK_E_FORMAT, "%s: tokenizer.ggml.merges has %llu entries", path,
                            (unsigned long long)merges->arr.n);
    if (wk__bpe_prepare(tok, merges->arr.n))
        return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    for (uint64_t r = 0; r < merges->arr.n; r++) {
        struct wk_gguf_str m = merges->arr.strs[r];
        const char *sp = memchr(m.data, ' ', (size_t)m.len);
        size_t la = sp ? (size_t)(sp - m.data) : 0, lb = sp ? (size_t)m.len - la - 1 : 0;
        st = sp && !memchr(sp + 1, ' ', lb) ? wk__bpe_add_merge(tok, m.data, la, sp + 1, lb, (int32_t)r)
                                            : WK_E_FORMAT;
        if (st == WK_E_NOT_FOUND)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tokenizer.ggml.merges entry %llu names a piece that is not in "
                                "the vocabulary",
                                path, (unsigned long long)r);
        if (st == WK_E_FORMAT)
            return wk_error_set(err, WK_E_FORMAT,
                                "%s: tokenizer.ggml.merges entry %llu is not two pieces separated "
                                "by one space",
                                path, (unsigned long long)r);
        if (st) return wk_error_set(err, st, "%s: out of memory", path);
    }
    tok->byte_level = byte_level;
    if (!byte_level) {
        tok->escape_spaces = true;
        /* byte fallback when the vocabulary has all 256 <0xNN> pieces */
        tok->byte_fallback = true;
        for (int b = 0; b < 256; b++) tok->byte_fallback &= tok->byte_ids[b] >= 0;
    }
    return WK_OK;
}

static enum wk_status load(struct wk_tokenizer *tok, const struct wk_gguf *g, struct wk_error *err)
{
    const char *path = wk_gguf_path(g);
    struct wk_gguf_str model;
    enum wk_status st = wk_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (st) return st;
    bool gemma4 = wk_gguf_str_eq(model, "gemma4");
    if (wk_gguf_str_eq(model, "llama")) {
        tok->model = WK_TOKENIZER_SPM;
    } else if (wk_gguf_str_eq(model, "gpt2") || gemma4) {
        tok->model = WK_TOKENIZER_BPE;
    } else if (wk_gguf_str_eq(model, "bert")) {
        tok->model = WK_TOKENIZER_WPM;
    } else {
        char m[64];
        wk_str_printable(model.data, (size_t)model.len, m, sizeof m);
        return wk_error_set(err, WK_E_UNSUPPORTED,
                            "%s: tokenizer model \"%s\" is not supported yet (wick knows \"llama\", "
                            "SentencePiece BPE, \"gpt2\", byte-level BPE, \"gemma4\", "
                            "SentencePiece-style BPE, and \"bert\", WordPiece)",
                            path, m);
    }
    if ((st = load_pieces(tok, g, err))) return st;
    if ((st = get_id(g, "tokenizer.ggml.bos_token_id", tok->n_vocab, &tok->bos, err)) ||
        (st = get_id(g, "tokenizer.ggml.eos_token_id", tok->n_vocab, &tok->eos, err)) ||
        (st = get_id(g, "tokenizer.ggml.eot_token_id", tok->n_vocab, &tok->eot, err)) ||
        (st = get_id(g, "tokenizer.ggml.unknown_token_id", tok->n_vocab, &tok->unk, err)))
        return st;
    /* fill-in-the-middle's tokens, where the file names them (the older keys first, the newer win) */
    static const char *const fim_keys[][2] = {
        {"tokenizer.ggml.prefix_token_id", "tokenizer.ggml.fim_pre_token_id"},
        {"tokenizer.ggml.suffix_token_id", "tokenizer.ggml.fim_suf_token_id"},
        {"tokenizer.ggml.middle_token_id", "tokenizer.ggml.fim_mid_token_id"},
        {NULL, "tokenizer.ggml.fim_pad_token_id"},
        {NULL, "tokenizer.ggml.fim_rep_token_id"},
        {NULL, "tokenizer.ggml.fim_sep_token_id"},
    };
    for (int k = 0; k < WK_FIM_N; k++)
        for (int v = 0; v < 2; v++)
            if (fim_keys[k][v] && (st = get_id(g, fim_keys[k][v], tok->n_vocab, &tok->fim[k], err))) return st;
    /* SentencePiece models add BOS unless told otherwise; byte-level BPE
     * models do not */
    tok->add_bos = tok->model == WK_TOKENIZER_SPM;
    if (wk_gguf_find(g, "tokenizer.ggml.add_bos_token") &&
        (st = wk_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &tok->add_bos, err)))
        return st;
    tok->add_space_prefix = false;
    if (wk_gguf_find(g, "tokenizer.ggml.add_space_prefix") &&
        (st = wk_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix, err)))
        return st;
    if (gemma4) tok->add_bos = true; /* as llama.cpp: Gemma 4 always starts with BOS */
    if (tok->model == WK_TOKENIZER_WPM && (st = wk__wpm_setup_gguf(tok, g, err))) return st;
    if (tok->model == WK_TOKENIZER_BPE && (st = load_bpe(tok, g, !gemma4, err))) return st;
    if (wk__vocab_mark_eog(tok)) return wk_error_set(err, WK_E_NOMEM, "%s: out of memory", path);
    return WK_OK;
}

static bool gguf_has_fim(const struct wk_gguf *g)
{
    static const char *const keys[3][2] = {{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
                                           {"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
                                           {"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"}};
    bool found[3] = {false, false, false};
    for (int k = 0; k < 3; k++) found[k] = wk_gguf_find(g, keys[k][0]) || wk_gguf_find(g, keys[k][1]);
    const struct wk_gguf_value *tokens = NULL, *types = NULL;
    if (wk_gguf_get_arr(g, "tokenizer.ggml.tokens", WK_GGUF_STRING, &tokens, NULL)) return false;
    if (wk_gguf_find(g, "tokenizer.ggml.token_type") &&
        (wk_gguf_get_arr(g, "tokenizer.ggml.token_type", WK_GGUF_I32, &types, NULL) || types->arr.n != tokens->arr.n))
        return false;
    for (uint64_t i = 0; i < tokens->arr.n && !(found[0] && found[1] && found[2]); i++) {
        const struct wk_gguf_str s = tokens->arr.strs[i];
        if (s.len < 5 || s.len > 24) continue; /* the spellings' lengths */
        int k = wk__fim_kind_of_text(s.data, (size_t)s.len);
        int64_t ty = types ? wk_gguf_arr_i64(types, i) : WK_TOKEN_NORMAL;
        if (k >= 0 && k < 3 && (ty == WK_TOKEN_CONTROL || ty == WK_TOKEN_USER_DEFINED)) found[k] = true;
    }
    return found[0] && found[1] && found[2];
}

bool wk_tokenizer_path_has_fim(const char *path)
{
    struct stat sb;
    bool fim = false;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        struct wk_tokenizer *tok;
        if (wk_tokenizer_from_hf(path, &tok, NULL)) return false;
        fim = tok->fim[WK_FIM_PRE] >= 0 && tok->fim[WK_FIM_SUF] >= 0 && tok->fim[WK_FIM_MID] >= 0;
        wk_tokenizer_destroy(tok);
        return fim;
    }
    struct wk_gguf *g;
    if (wk_gguf_open(path, &g, NULL)) return false;
    fim = gguf_has_fim(g);
    wk_gguf_close(g);
    return fim;
}

enum wk_status wk_tokenizer_from_gguf(const struct wk_gguf *g, struct wk_tokenizer **out,
                                      struct wk_error *err)
{
    *out = NULL;
    struct wk_tokenizer *tok = wk_calloc(1, sizeof *tok);
    if (!tok) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    enum wk_status st = load(tok, g, err);
    if (st) {
        wk_tokenizer_destroy(tok);
        return st;
    }
    *out = tok;
    return WK_OK;
}
