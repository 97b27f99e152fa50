/*
 * hf.c - a tokenizer from a Hugging Face folder: tokenizer.json (the
 * `tokenizers` library's format) plus tokenizer_config.json,
 * special_tokens_map.json and generation_config.json for BOS, the EOS set
 * and add_bos.
 *
 * What is understood of tokenizer.json (everything else is refused with
 * an error naming it, never ignored):
 *   model       BPE: vocab (piece -> id), merges ("a b" or ["a", "b"], in
 *               rank order), byte_fallback, unk_token, ignore_merges; no
 *               continuing_subword_prefix / end_of_word_suffix / dropout.
 *               WordPiece (BERT; wordpiece.c): vocab, unk_token,
 *               continuing_subword_prefix, max_input_chars_per_word; with
 *               the BertNormalizer and the BertPreTokenizer only.
 *   normalizer  null; Replace " " -> "▁"; Prepend "▁"; NFC, NFD, NFKC, NFKD
 *               (normalize.c; not with added tokens "normalized": true);
 *               a Sequence of those (its Unicode forms folded into one).
 *   pre_tokenizer  null; ByteLevel (use_regex: the GPT-2 split);
 *               Split {Regex, behavior Isolated}; Digits; Metaspace
 *               (replacement "▁", split false); Sequence of those. A Split
 *               on " " after spaces were replaced is a no-op (Gemma).
 *   added_tokens  split out before the model, longest first: "special"
 *               ones only in template scaffolding (control), the others
 *               always (user-defined).
 *   post_processor  what a tokenization with special tokens adds around
 *               the text: TemplateProcessing's "single" template (at most
 *               one special token of one id before $A, the BOS, and one
 *               after, the EOS), BertProcessing ([CLS] $A [SEP]),
 *               RobertaProcessing (<s> $A </s>), ByteLevel (nothing; its
 *               offsets do not matter here), a Sequence of those; "pair"
 *               is not used. When tokenizer.json has one it alone decides
 *               add_bos and add_eos, as transformers 5 does (it ignores
 *               tokenizer_config.json's add_bos_token and add_eos_token
 *               once a tokenizer.json exists, and its save_pretrained no
 *               longer writes them); without one (null), those keys do,
 *               as wick read them before.
 * A ByteLevel pre-tokenizer makes the model byte-level (GPT-2 bytes to
 * characters); otherwise it is character-level with byte fallback, as
 * SentencePiece-converted tokenizers are.
 */
#include "tokenizer_internal.h"
#include "../io/wk_json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MAX_VOCAB (1 << 24)

struct hf_ctx {
    const char *name; /* for messages */
    struct wk_error *err;
};

static enum wk_status bad(struct hf_ctx *c, enum wk_status st, const char *fmt, const char *what)
{
    char msg[300];
    snprintf(msg, sizeof msg, fmt, what);
    return wk_error_set(c->err, st, "%s: %s", c->name, msg);
}

static bool str_is(json_t *j, const char *s)
{
    return json_is_string(j) && strcmp(json_string_value(j), s) == 0;
}

/* ------------------------------------------------------------ pieces */

/* Highest id in the vocab and the added tokens, checked to be sane. */
static enum wk_status count_ids(struct hf_ctx *c, json_t *vocab, json_t *added, int32_t *n)
{
    int64_t max_id = -1;
    const char *key;
    json_t *v;
    *n = 0;
    json_object_foreach(vocab, key, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= MAX_VOCAB)
            return bad(c, WK_E_FORMAT, "model.vocab: the id of \"%.60s\" is not an integer in 0..2^24",
                       key);
        max_id = WK_MAX(max_id, json_integer_value(v));
    }
    size_t i;
    if (added) json_array_foreach(added, i, v)
    {
        json_t *id = json_object_get(v, "id");
        if (!json_is_object(v) || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= MAX_VOCAB || !json_is_string(json_object_get(v, "content")))
            return wk_error_set(c->err, WK_E_FORMAT, "%s: added_tokens: entry %zu lacks an id in 0..2^24 or a content",
                                c->name, i);
        max_id = WK_MAX(max_id, json_integer_value(id));
    }
    if (max_id < 0) return bad(c, WK_E_FORMAT, "model.vocab is empty%s", "");
    *n = (int32_t)(max_id + 1);
    return WK_OK;
}

/* "<0xNN>" */
static bool is_byte_piece(const char *s, size_t n)
{
    unsigned v;
    char tail;
    return n == 6 && sscanf(s, "<0x%2X%c", &v, &tail) == 2 && tail == '>';
}

static enum wk_status load_vocab(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *model,
                                 json_t *added)
{
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab)) return bad(c, WK_E_FORMAT, "model.vocab is not an object%s", "");
    if (!json_is_array(added)) added = NULL;
    int32_t n = 0;
    enum wk_status st = count_ids(c, vocab, added, &n);
    if (st) return st;
    if (wk__vocab_begin(tok, n)) return bad(c, WK_E_NOMEM, "out of memory%s", "");
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v)
    {
        size_t len = strlen(key);
        enum wk_token_type ty = tok->byte_fallback && is_byte_piece(key, len) ? WK_TOKEN_BYTE
                                                                               : WK_TOKEN_NORMAL;
        if (wk__vocab_set(tok, (int32_t)json_integer_value(v), key, len, ty, 0))
            return bad(c, WK_E_NOMEM, "out of memory%s", "");
    }
    size_t i;
    if (added) json_array_foreach(added, i, v)
    {
        json_t *content = json_object_get(v, "content");
        bool special = json_is_true(json_object_get(v, "special"));
        if (wk__vocab_set(tok, (int32_t)json_integer_value(json_object_get(v, "id")),
                          json_string_value(content), json_string_length(content),
                          special ? WK_TOKEN_CONTROL : WK_TOKEN_USER_DEFINED, 0))
            return bad(c, WK_E_NOMEM, "out of memory%s", "");
    }
    if (wk__vocab_finish(tok)) return bad(c, WK_E_NOMEM, "out of memory%s", "");
    return WK_OK;
}

static enum wk_status load_merges(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *model)
{
    json_t *merges = json_object_get(model, "merges");
    if (merges && !json_is_array(merges)) return bad(c, WK_E_FORMAT, "model.merges is not an array%s", "");
    if (!merges) return wk__bpe_prepare(tok, 0) ? bad(c, WK_E_NOMEM, "out of memory%s", "") : WK_OK;
    if (wk__bpe_prepare(tok, json_array_size(merges))) return bad(c, WK_E_NOMEM, "out of memory%s", "");
    size_t r;
    json_t *m;
    json_array_foreach(merges, r, m)
    {
        const char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        if (json_is_string(m)) { /* "a b" */
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            if (sp && !strchr(sp + 1, ' ')) a = s, la = (size_t)(sp - s), b = sp + 1, lb = strlen(sp + 1);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) { /* ["a", "b"] */
            a = json_string_value(json_array_get(m, 0)), la = json_string_length(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1)), lb = json_string_length(json_array_get(m, 1));
        }
        char idx[32];
        snprintf(idx, sizeof idx, "%zu", r);
        enum wk_status st = a ? wk__bpe_add_merge(tok, a, la, b, lb, (int32_t)r) : WK_E_FORMAT;
        if (st == WK_E_FORMAT)
            return bad(c, WK_E_FORMAT, "model.merges[%s] is not two pieces (\"a b\" or [\"a\", \"b\"])", idx);
        if (st == WK_E_NOT_FOUND)
            return bad(c, WK_E_FORMAT, "model.merges[%s] names a piece that is not in the vocabulary", idx);
        if (st) return bad(c, st, "model.merges[%s]: out of memory", idx);
    }
    return WK_OK;
}

/* ----------------------------------------------------- normalizer etc. */

/* BertNormalizer's flags (strip_accents null: as lowercase). */
static enum wk_status apply_bert_normalizer(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *n)
{
    if (tok->model != WK_TOKENIZER_WPM)
        return bad(c, WK_E_UNSUPPORTED, "normalizer BertNormalizer is supported with a WordPiece model only%s", "");
    json_t *clean = json_object_get(n, "clean_text"), *cjk = json_object_get(n, "handle_chinese_chars");
    json_t *strip = json_object_get(n, "strip_accents"), *lower = json_object_get(n, "lowercase");
    tok->wpm.clean_text = !json_is_false(clean);
    tok->wpm.handle_chinese = !json_is_false(cjk);
    tok->wpm.lowercase = !json_is_false(lower);
    tok->wpm.strip_accents = json_is_boolean(strip) ? json_is_true(strip) : tok->wpm.lowercase;
    tok->wpm_normalizer = true;
    return WK_OK;
}

static enum wk_status apply_normalizer(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *n)
{
    if (!n || json_is_null(n)) return WK_OK;
    json_t *type = json_object_get(n, "type");
    if (str_is(type, "BertNormalizer")) return apply_bert_normalizer(c, tok, n);
    if (tok->model == WK_TOKENIZER_WPM)
        return bad(c, WK_E_UNSUPPORTED, "a WordPiece model is supported with the BertNormalizer only, not \"%.40s\"",
                   json_is_string(type) ? json_string_value(type) : "?");
    if (str_is(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers"), *e;
        size_t i;
        if (!json_is_array(list)) return bad(c, WK_E_FORMAT, "normalizer.normalizers is not an array%s", "");
        json_array_foreach(list, i, e)
        {
            enum wk_status st = apply_normalizer(c, tok, e);
            if (st) return st;
        }
        return WK_OK;
    }
    if (str_is(type, "Replace")) {
        json_t *pat = json_object_get(json_object_get(n, "pattern"), "String");
        if (str_is(pat, " ") && str_is(json_object_get(n, "content"), "\xe2\x96\x81")) {
            tok->escape_spaces = true;
            return WK_OK;
        }
        return bad(c, WK_E_UNSUPPORTED, "normalizer Replace other than \" \" -> \"▁\" is not supported%s", "");
    }
    if (str_is(type, "Prepend") && str_is(json_object_get(n, "prepend"), "\xe2\x96\x81")) {
        tok->add_space_prefix = true;
        return WK_OK;
    }
    static const struct {
        const char *name;
        bool compat, compose;
    } forms[] = {{"NFC", false, true}, {"NFD", false, false}, {"NFKC", true, true},
                 {"NFKD", true, false}};
    for (size_t i = 0; i < WK_ARRAY_LEN(forms); i++) {
        if (!str_is(type, forms[i].name)) continue;
        /* wick normalizes before it escapes spaces; NFC and NFD commute with
         * that, but NFKC and NFKD turn U+00A0 and U+2000..U+200A into " " */
        if (forms[i].compat && tok->escape_spaces)
            return bad(c, WK_E_UNSUPPORTED,
                       "normalizer %s after Replace \" \" -> \"▁\" is not supported", forms[i].name);
        /* one after another they come to one form: compatibility if any of
         * them decomposes compatibility characters, composed if the last
         * composes (NFC(NFKD(x)) = NFKC(x), NFD(NFKC(x)) = NFKD(x)) */
        bool compat = forms[i].compat || tok->unicode_form == WK__FORM_NFKC ||
                      tok->unicode_form == WK__FORM_NFKD;
        tok->unicode_form = compat ? (forms[i].compose ? WK__FORM_NFKC : WK__FORM_NFKD)
                                   : (forms[i].compose ? WK__FORM_NFC : WK__FORM_NFD);
        return WK_OK;
    }
    return bad(c, WK_E_UNSUPPORTED, "normalizer type \"%.40s\" is not supported",
               json_is_string(type) ? json_string_value(type) : "?");
}

/* Added tokens marked "normalized": true are matched by `tokenizers` in
 * the normalized text, after the others are split out of the raw text;
 * wick splits all of them out of the raw text, before normalizing (see
 * normalize.c). The two agree unless a normalizer changes the text around
 * such a token, which the Unicode forms can: refused there. */
static enum wk_status check_added_normalized(struct hf_ctx *c, const struct wk_tokenizer *tok,
                                             json_t *added)
{
    if (tok->unicode_form == WK__FORM_NONE || !json_is_array(added)) return WK_OK;
    size_t i;
    json_t *v;
    json_array_foreach(added, i, v)
    {
        if (json_is_true(json_object_get(v, "normalized")))
            return bad(c, WK_E_UNSUPPORTED,
                       "added token \"%.60s\" has \"normalized\": true, which is not supported "
                       "with a Unicode normalizer (NFC, NFD, NFKC, NFKD)",
                       json_string_value(json_object_get(v, "content")));
    }
    return WK_OK;
}

static enum wk_status apply_pre(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *p)
{
    if (!p || json_is_null(p)) return WK_OK;
    json_t *type = json_object_get(p, "type");
    enum wk_status st = WK_OK;
    if ((tok->model == WK_TOKENIZER_WPM) != str_is(type, "BertPreTokenizer"))
        return bad(c, WK_E_UNSUPPORTED, "pre_tokenizer \"%.40s\": wick pairs BertPreTokenizer with a WordPiece model only",
                   json_is_string(type) ? json_string_value(type) : "?");
    if (str_is(type, "BertPreTokenizer")) return WK_OK; /* wordpiece.c splits */
    if (str_is(type, "Sequence")) {
        json_t *list = json_object_get(p, "pretokenizers"), *e;
        size_t i;
        if (!json_is_array(list)) return bad(c, WK_E_FORMAT, "pre_tokenizer.pretokenizers is not an array%s", "");
        json_array_foreach(list, i, e) if ((st = apply_pre(c, tok, e))) return st;
        return WK_OK;
    }
    if (str_is(type, "ByteLevel")) {
        tok->byte_level = true;
        if (json_is_true(json_object_get(p, "add_prefix_space")))
            return bad(c, WK_E_UNSUPPORTED, "ByteLevel add_prefix_space is not supported%s", "");
        json_t *use = json_object_get(p, "use_regex");
        if (!use || json_is_true(use)) st = wk__bpe_add_regex(tok, wk__bpe_gpt2_regex());
    } else if (str_is(type, "Digits")) {
        st = wk__bpe_add_regex(tok, json_is_true(json_object_get(p, "individual_digits")) ? "\\p{N}"
                                                                                            : "\\p{N}+");
    } else if (str_is(type, "Split")) {
        json_t *pat = json_object_get(p, "pattern"), *re = json_object_get(pat, "Regex");
        json_t *str = json_object_get(pat, "String");
        if (str_is(str, " ") && tok->escape_spaces) return WK_OK; /* no spaces are left */
        if (!json_is_string(re) || !str_is(json_object_get(p, "behavior"), "Isolated") ||
            json_is_true(json_object_get(p, "invert")))
            return bad(c, WK_E_UNSUPPORTED,
                       "pre_tokenizer Split is supported with a Regex pattern and behavior "
                       "Isolated only%s", "");
        st = wk__bpe_add_regex(tok, json_string_value(re));
        if (st == WK_E_FORMAT) return bad(c, WK_E_FORMAT, "pre_tokenizer Split regex does not compile: %.100s",
                                          json_string_value(re));
    } else if (str_is(type, "Metaspace")) {
        if (!str_is(json_object_get(p, "replacement"), "\xe2\x96\x81") ||
            json_is_true(json_object_get(p, "split")))
            return bad(c, WK_E_UNSUPPORTED, "pre_tokenizer Metaspace is supported with \"▁\" and split false only%s", "");
        tok->escape_spaces = true;
        json_t *scheme = json_object_get(p, "prepend_scheme");
        tok->add_space_prefix = str_is(scheme, "first") || str_is(scheme, "always") ||
                                json_is_true(json_object_get(p, "add_prefix_space"));
    } else {
        return bad(c, WK_E_UNSUPPORTED, "pre_tokenizer type \"%.40s\" is not supported",
                   json_is_string(type) ? json_string_value(type) : "?");
    }
    if (st == WK_E_UNSUPPORTED) return bad(c, st, "more than 8 pre-tokenizer splits%s", "");
    return st ? bad(c, st, "pre_tokenizer: out of memory%s", "") : WK_OK;
}

/* ------------------------------------------------------ post-processor */

/* Records id as the token put before (before) or after the text; one each. */
static enum wk_status post_add(struct hf_ctx *c, struct wk_tokenizer *tok, bool before, json_t *id,
                               const char *name)
{
    if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= tok->n_vocab)
        return bad(c, WK_E_FORMAT, "post_processor: the id of special token \"%.60s\" is not in the vocabulary",
                   name);
    int32_t *slot = before ? &tok->post_bos : &tok->post_eos;
    if (*slot >= 0)
        return bad(c, WK_E_UNSUPPORTED,
                   before ? "post_processor: more than one special token before the text (\"%.60s\"); "
                            "wick adds one BOS"
                          : "post_processor: more than one special token after the text (\"%.60s\"); "
                            "wick adds one EOS",
                   name);
    *slot = (int32_t)json_integer_value(id);
    return WK_OK;
}

/* TemplateProcessing: the special tokens of "single" before and after $A,
 * each with its ids from "special_tokens". */
static enum wk_status post_template(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *p)
{
    json_t *single = json_object_get(p, "single"), *specials = json_object_get(p, "special_tokens"), *e;
    if (!json_is_array(single)) return bad(c, WK_E_FORMAT, "post_processor.single is not an array%s", "");
    bool seen_a = false;
    size_t i;
    json_array_foreach(single, i, e)
    {
        json_t *seq = json_object_get(e, "Sequence"), *sp = json_object_get(e, "SpecialToken");
        if (seq && str_is(json_object_get(seq, "id"), "A") && !seen_a) {
            seen_a = true;
            continue;
        }
        json_t *name = json_object_get(sp, "id");
        if (!json_is_string(name))
            return bad(c, WK_E_FORMAT, "post_processor.single: an item is neither $A (once) nor a SpecialToken%s",
                       "");
        const char *nm = json_string_value(name);
        json_t *ids = json_object_get(json_object_get(specials, nm), "ids");
        if (!json_is_array(ids))
            return bad(c, WK_E_FORMAT, "post_processor: special token \"%.60s\" is not in special_tokens", nm);
        if (json_array_size(ids) != 1)
            return bad(c, WK_E_UNSUPPORTED,
                       "post_processor: special token \"%.60s\" stands for other than one id", nm);
        enum wk_status st = post_add(c, tok, !seen_a, json_array_get(ids, 0), nm);
        if (st) return st;
    }
    return seen_a ? WK_OK : bad(c, WK_E_FORMAT, "post_processor.single has no $A%s", "");
}

/* ["[CLS]", 101]: the id of a BertProcessing / RobertaProcessing token. */
static json_t *pair_id(json_t *p, const char *key, const char **name)
{
    json_t *pair = json_object_get(p, key);
    *name = json_is_string(json_array_get(pair, 0)) ? json_string_value(json_array_get(pair, 0)) : key;
    return json_is_array(pair) && json_array_size(pair) == 2 ? json_array_get(pair, 1) : NULL;
}

static enum wk_status apply_post(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *p)
{
    if (!p || json_is_null(p)) return WK_OK;
    tok->has_post_processor = true;
    json_t *type = json_object_get(p, "type");
    enum wk_status st = WK_OK;
    if (str_is(type, "Sequence")) {
        json_t *list = json_object_get(p, "processors"), *e;
        size_t i;
        if (!json_is_array(list)) return bad(c, WK_E_FORMAT, "post_processor.processors is not an array%s", "");
        json_array_foreach(list, i, e) if ((st = apply_post(c, tok, e))) return st;
        return WK_OK;
    }
    if (str_is(type, "ByteLevel")) return WK_OK;
    if (str_is(type, "TemplateProcessing")) return post_template(c, tok, p);
    if (str_is(type, "BertProcessing") || str_is(type, "RobertaProcessing")) {
        const char *cls, *sep;
        json_t *cls_id = pair_id(p, "cls", &cls), *sep_id = pair_id(p, "sep", &sep);
        if ((st = post_add(c, tok, true, cls_id, cls))) return st;
        return post_add(c, tok, false, sep_id, sep);
    }
    return bad(c, WK_E_UNSUPPORTED, "post_processor type \"%.40s\" is not supported",
               json_is_string(type) ? json_string_value(type) : "?");
}

/* What the post-processor adds becomes add_bos / bos and add_eos; after
 * the companion files, which may name another BOS, again. */
static void use_post(struct wk_tokenizer *tok)
{
    if (!tok->has_post_processor) return;
    tok->add_bos = tok->post_bos >= 0;
    if (tok->add_bos) tok->bos = tok->post_bos;
    tok->add_eos = tok->post_eos >= 0;
    tok->eos_to_add = tok->post_eos;
}

int32_t wk_tokenizer_eos_to_add(const struct wk_tokenizer *tok)
{
    return tok->add_eos ? tok->eos_to_add : -1;
}

/* ---------------------------------------------------- companion files */

/* A token given as a string or as {"content": string}; -1 when absent. */
static int32_t token_ref(const struct wk_tokenizer *tok, json_t *j)
{
    if (json_is_object(j)) j = json_object_get(j, "content");
    if (!json_is_string(j)) return -1;
    return wk_tokenizer_find(tok, json_string_value(j), json_string_length(j));
}

static json_t *load_json_file(const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_t *j = wk_json_load_file(path, JSON_ALLOW_NUL, NULL);
    /* transformers writes model_max_length = 1e30 as a 100-bit integer */
    return j ? j : wk_json_load_file(path, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
}

static void apply_companions(struct wk_tokenizer *tok, const char *dir)
{
    json_t *cfg = load_json_file(dir, "tokenizer_config.json");
    json_t *map = load_json_file(dir, "special_tokens_map.json");
    json_t *gen = load_json_file(dir, "generation_config.json");
    json_t *srcs[2] = {map, cfg};
    for (int k = 0; k < 2; k++) {
        if (!srcs[k]) continue;
        int32_t b = token_ref(tok, json_object_get(srcs[k], "bos_token"));
        int32_t e = token_ref(tok, json_object_get(srcs[k], "eos_token"));
        int32_t u = token_ref(tok, json_object_get(srcs[k], "unk_token"));
        if (b >= 0) tok->bos = b;
        if (e >= 0) tok->eos = e;
        if (u >= 0) tok->unk = u;
    }
    /* transformers 5 reads these only without a tokenizer.json (use_post) */
    if (cfg && json_is_boolean(json_object_get(cfg, "add_bos_token")))
        tok->add_bos = json_is_true(json_object_get(cfg, "add_bos_token"));
    if (cfg && json_is_boolean(json_object_get(cfg, "add_eos_token")))
        tok->add_eos = json_is_true(json_object_get(cfg, "add_eos_token"));
    if (gen) {
        json_t *bos = json_object_get(gen, "bos_token_id");
        if (json_is_integer(bos) && json_integer_value(bos) >= 0 && json_integer_value(bos) < tok->n_vocab)
            tok->bos = (int32_t)json_integer_value(bos);
    }
    tok->eos_to_add = tok->eos;
    if (tok->eos < 0) tok->add_eos = false;
    use_post(tok);
    wk__vocab_mark_eog(tok);
    if (gen && tok->eog) { /* every id of generation_config's eos_token_id ends generation */
        json_t *eos = json_object_get(gen, "eos_token_id"), *e;
        size_t i;
        if (json_is_integer(eos) && json_integer_value(eos) >= 0 && json_integer_value(eos) < tok->n_vocab)
            tok->eog[json_integer_value(eos)] = 1;
        if (json_is_array(eos)) json_array_foreach(eos, i, e)
            if (json_is_integer(e) && json_integer_value(e) >= 0 && json_integer_value(e) < tok->n_vocab)
                tok->eog[json_integer_value(e)] = 1;
    }
    json_decref(cfg);
    json_decref(map);
    json_decref(gen);
}

/* ------------------------------------------------------------- entry */

/* A WordPiece model (wordpiece.c): vocab, unknown token, prefix, word
 * limit; its normalizer and pre-tokenizer must be BERT's. */
static enum wk_status load_wordpiece(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *root, json_t *model)
{
    tok->model = WK_TOKENIZER_WPM;
    json_t *prefix = json_object_get(model, "continuing_subword_prefix");
    json_t *max = json_object_get(model, "max_input_chars_per_word");
    const char *pre = json_is_string(prefix) ? json_string_value(prefix) : "##";
    if (strlen(pre) >= sizeof tok->wpm.prefix)
        return bad(c, WK_E_UNSUPPORTED, "model.continuing_subword_prefix \"%.40s\" is longer than 15 bytes", pre);
    memcpy(tok->wpm.prefix, pre, strlen(pre) + 1);
    tok->wpm.prefix_len = (uint32_t)strlen(pre);
    tok->wpm.max_chars = 100;
    if (json_is_integer(max))
        tok->wpm.max_chars = (int32_t)WK_MIN(WK_MAX(json_integer_value(max), 0), 1 << 20);
    enum wk_status st;
    if ((st = load_vocab(c, tok, model, json_object_get(root, "added_tokens")))) return st;
    tok->unk = token_ref(tok, json_object_get(model, "unk_token"));
    if (tok->unk < 0) return bad(c, WK_E_FORMAT, "model.unk_token is missing or not in the vocabulary%s", "");
    if ((st = apply_normalizer(c, tok, json_object_get(root, "normalizer")))) return st;
    if (!tok->wpm_normalizer) return bad(c, WK_E_UNSUPPORTED, "a WordPiece model needs the BertNormalizer%s", "");
    if ((st = apply_pre(c, tok, json_object_get(root, "pre_tokenizer")))) return st;
    if (!json_is_object(json_object_get(root, "pre_tokenizer")))
        return bad(c, WK_E_UNSUPPORTED, "a WordPiece model needs the BertPreTokenizer%s", "");
    tok->post_bos = tok->post_eos = -1;
    if ((st = apply_post(c, tok, json_object_get(root, "post_processor")))) return st;
    use_post(tok);
    return WK_OK;
}

static enum wk_status load(struct hf_ctx *c, struct wk_tokenizer *tok, json_t *root)
{
    if (!json_is_object(root)) return bad(c, WK_E_FORMAT, "not a JSON object%s", "");
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return bad(c, WK_E_FORMAT, "no \"model\" object%s", "");
    json_t *type = json_object_get(model, "type");
    if (str_is(type, "WordPiece")) return load_wordpiece(c, tok, root, model);
    if (type && !str_is(type, "BPE"))
        return bad(c, WK_E_UNSUPPORTED, "model type \"%.40s\" is not supported (only BPE and WordPiece)",
                   json_is_string(type) ? json_string_value(type) : "?");
    if (!type && !json_object_get(model, "merges"))
        return bad(c, WK_E_UNSUPPORTED, "model has no type and no merges: not BPE%s", "");
    json_t *prefix = json_object_get(model, "continuing_subword_prefix");
    json_t *suffix = json_object_get(model, "end_of_word_suffix");
    if ((json_is_string(prefix) && json_string_length(prefix) > 0) ||
        (json_is_string(suffix) && json_string_length(suffix) > 0))
        return bad(c, WK_E_UNSUPPORTED, "BPE with a subword prefix or word suffix is not supported%s", "");
    json_t *dropout = json_object_get(model, "dropout");
    if (json_is_number(dropout) && json_number_value(dropout) > 0)
        return bad(c, WK_E_UNSUPPORTED, "BPE dropout is not supported%s", "");
    tok->model = WK_TOKENIZER_BPE;
    tok->byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
    tok->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    enum wk_status st;
    if ((st = load_vocab(c, tok, model, json_object_get(root, "added_tokens")))) return st;
    tok->unk = token_ref(tok, json_object_get(model, "unk_token"));
    if ((st = apply_normalizer(c, tok, json_object_get(root, "normalizer")))) return st;
    if ((st = check_added_normalized(c, tok, json_object_get(root, "added_tokens")))) return st;
    if ((st = load_merges(c, tok, model))) return st;
    if ((st = apply_pre(c, tok, json_object_get(root, "pre_tokenizer")))) return st;
    tok->post_bos = tok->post_eos = -1;
    if ((st = apply_post(c, tok, json_object_get(root, "post_processor")))) return st;
    use_post(tok);
    return WK_OK;
}

enum wk_status wk_tokenizer_from_hf_json(const char *json_text, size_t len, const char *name,
                                         struct wk_tokenizer **out, struct wk_error *err)
{
    *out = NULL;
    struct hf_ctx c = {.name = name, .err = err};
    json_error_t jerr;
    if (!json_text || len == 0) return wk_error_set(err, WK_E_FORMAT, "%s: empty file, not JSON", name);
    json_t *root = json_loadb(json_text, len, JSON_ALLOW_NUL, &jerr);
    if (!root)
        return wk_error_set(err, WK_E_FORMAT, "%s: invalid JSON at line %d: %s", name, jerr.line,
                            jerr.text);
    struct wk_tokenizer *tok = wk_calloc(1, sizeof *tok);
    enum wk_status st = tok ? load(&c, tok, root) : wk_error_set(err, WK_E_NOMEM, "out of memory");
    json_decref(root);
    if (!st && !tok->eog && wk__vocab_mark_eog(tok)) st = wk_error_set(err, WK_E_NOMEM, "out of memory");
    if (st) {
        wk_tokenizer_destroy(tok);
        return st;
    }
    *out = tok;
    return WK_OK;
}

enum wk_status wk_tokenizer_from_hf(const char *dir, struct wk_tokenizer **out,
                                    struct wk_error *err)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    struct wk_mapped_file f;
    enum wk_status st = wk_mapped_file_open(&f, path, err);
    if (st) return st;
    st = wk_tokenizer_from_hf_json((const char *)f.data, (size_t)f.size_bytes, path, out, err);
    wk_mapped_file_close(&f);
    if (st) return st;
    wk_free((*out)->eog);
    (*out)->eog = NULL;
    apply_companions(*out, dir);
    if (!(*out)->eog) {
        wk_tokenizer_destroy(*out);
        *out = NULL;
        return wk_error_set(err, WK_E_NOMEM, "out of memory");
    }
    return WK_OK;
}
