/*
 * bpe.c - byte-level BPE (Radford et al. 2019, GPT-2; Sennrich et al. 2016
 * for BPE), as the Hugging Face `tokenizers` ByteLevel model runs it.
 *
 * Encoding one run of text:
 *   1. pre-tokenize: the model's regexes (PCRE2 with UTF and UCP, JIT),
 *      applied in order; each splits every fragment into its matches and
 *      the gaps between them;
 *   2. each fragment's bytes become symbols, one per byte, through the
 *      GPT-2 byte-to-character table (printable Latin-1 bytes map to
 *      themselves, the rest to U+0100 onwards);
 *   3. adjacent symbols merge by the merge list's rank, lowest first, the
 *      leftmost on ties, until no listed pair remains.
 * The merge table is an open-addressing hash of (left id, right id) to
 * (rank, merged id), built from tokenizer.ggml.merges at load.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_internal.h"

#include <pcre2.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------ byte <-> character */

/* GPT-2's bytes_to_unicode: code point of byte b. */
static uint32_t byte_to_cp(uint8_t b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    /* the others, in byte order, take 256, 257, ... */
    uint32_t n = 0;
    for (uint32_t x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
    return 256 + n;
}

static size_t cp_to_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

size_t wk__bpe_piece_bytes(const struct wk__bpe *bpe, const char *piece, size_t len, char *buf,
                           size_t cap)
{
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        uint8_t c = (uint8_t)piece[i];
        uint32_t n = WK_MIN(wk__utf8_len(c), (uint32_t)(len - i)), cp = 0xffffffffu;
        if (n == 1 && c < 0x80) cp = c;
        else if (n == 2) cp = ((uint32_t)(c & 0x1f) << 6) | ((uint8_t)piece[i + 1] & 0x3f);
        if (cp < WK_ARRAY_LEN(bpe->cp_to_byte) && bpe->cp_to_byte[cp] >= 0) {
            if (out < cap) buf[out] = (char)bpe->cp_to_byte[cp];
            out++;
        } else { /* not a byte-level character (an added token's text): as is */
            for (uint32_t k = 0; k < n; k++, out++)
                if (out < cap) buf[out] = piece[i + k];
        }
        i += n;
    }
    return out;
}

/* ---------------------------------------------------------- merges */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static bool merge_find(const struct wk__bpe *bpe, int32_t a, int32_t b, int32_t *rank, int32_t *merged)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b, mask = bpe->merges_cap - 1;
    for (uint64_t i = mix64(key) & mask;; i = (i + 1) & mask) {
        const struct wk__merge_entry *e = &bpe->merges[i];
        if (e->merged < 0) return false;
        if (e->key == key) {
            *rank = e->rank;
            *merged = e->merged;
            return true;
        }
    }
}

enum wk_status wk__bpe_prepare(struct wk_tokenizer *tok, uint64_t n_merges)
{
    struct wk__bpe *bpe = &tok->bpe;
    uint64_t cap = 16;
    while (cap < n_merges * 2 + 2) cap <<= 1;
    bpe->merges = wk_malloc(cap * sizeof *bpe->merges);
    if (!bpe->merges) return WK_E_NOMEM;
    for (uint64_t i = 0; i < cap; i++) bpe->merges[i] = (struct wk__merge_entry){0, -1, 0};
    bpe->merges_cap = cap;
    for (size_t i = 0; i < WK_ARRAY_LEN(bpe->cp_to_byte); i++) bpe->cp_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        char u[2];
        uint32_t cp = byte_to_cp((uint8_t)b);
        bpe->cp_to_byte[cp] = (int16_t)b;
        bpe->byte_char_ids[b] = wk_tokenizer_find(tok, u, cp_to_utf8(cp, u));
    }
    return WK_OK;
}

enum wk_status wk__bpe_add_merge(struct wk_tokenizer *tok, const char *a, size_t la, const char *b,
                                 size_t lb, int32_t rank)
{
    struct wk__bpe *bpe = &tok->bpe;
    char joined[1024];
    if (la == 0 || lb == 0 || la + lb > sizeof joined) return WK_E_FORMAT;
    int32_t ia = wk_tokenizer_find(tok, a, la), ib = wk_tokenizer_find(tok, b, lb);
    memcpy(joined, a, la);
    memcpy(joined + la, b, lb);
    int32_t iab = wk_tokenizer_find(tok, joined, la + lb);
    if (ia < 0 || ib < 0 || iab < 0) return WK_E_NOT_FOUND;
    if ((uint64_t)bpe->n_merges * 2 + 2 > bpe->merges_cap) return WK_E_NOMEM; /* sized by prepare */
    uint64_t key = ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib, mask = bpe->merges_cap - 1;
    uint64_t i = mix64(key) & mask;
    while (bpe->merges[i].merged >= 0 && bpe->merges[i].key != key) i = (i + 1) & mask;
    if (bpe->merges[i].merged >= 0) return WK_OK; /* a repeated merge keeps its first rank */
    bpe->merges[i] = (struct wk__merge_entry){key, iab, rank};
    bpe->n_merges++;
    return WK_OK;
}

/* ---------------------------------------------------- pre-tokenizers */

/* The GPT-2 split (tokenizers' ByteLevel pre-tokenizer, use_regex). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Llama 3 (tiktoken cl100k style): case-insensitive contractions, letters
 * with one leading non-letter, digits in groups of at most three. */
#define RE_LLAMA3                                                                                  \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[" \
    "\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Qwen 2: as Llama 3 but single digits. */
#define RE_QWEN2                                                                                   \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* o200k (gpt-4o, gpt-oss; tiktoken's pattern, as the models'
 * tokenizer.json writes it): a word is upper-case letters then lower-case
 * ones (or the reverse), with one leading non-letter and a contraction;
 * digits in groups of at most three; '/' and line ends after punctuation. */
#define RE_O200K                                                                                      \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"           \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"           \
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|" \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* tokenizer.ggml.pre names (llama.cpp's convert_hf_to_gguf.py names) and
 * the regexes the model's tokenizer.json pre-tokenizer amounts to. */
static const struct {
    const char *names[10];
    const char *regex[3];
} g_pre[] = {
    {{"gpt2", "default", "mpt", "olmo", "jais", "trillion", "granite-docling"}, {RE_GPT2}},
    {{"llama3", "llama-bpe", "llama-v3", "dbrx", "smaug-bpe", "falcon3"}, {RE_LLAMA3}},
    {{"qwen2", "stablelm2", "hunyuan", "solar-open", "deepseek-r1-qwen"}, {RE_QWEN2}},
    {{"gpt-4o"}, {RE_O200K}},
    /* starcoder-style tokenizers: Digits(individual) then ByteLevel */
    {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"},
     {"\\p{N}", RE_GPT2}},
    {{"chatglm-bpe", "glm4"},
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {{"falcon"},
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {{"deepseek-coder"}, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+"}},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {" ?[^(\\s|.,!?…。，、।۔،)]+"}},
    /* Mistral-Nemo's tekken (its tokenizer.json Split regex): a word is
     * capitals then lower case, or lower case alone, or capitals alone */
    {{"tekken"},
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
};

enum wk_status wk__bpe_add_regex(struct wk_tokenizer *tok, const char *pattern)
{
    struct wk__bpe *bpe = &tok->bpe;
    if (bpe->n_regex == (int32_t)WK_ARRAY_LEN(bpe->regex)) return WK_E_UNSUPPORTED;
    int ecode;
    PCRE2_SIZE eoff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff,
                                   NULL);
    if (!re) return WK_E_FORMAT;
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: without it the interpreter runs */
    bpe->regex[bpe->n_regex++] = re;
    return WK_OK;
}

enum wk_status wk__bpe_use_named_pre(struct wk_tokenizer *tok, const char *name)
{
    for (size_t i = 0; i < WK_ARRAY_LEN(g_pre); i++) {
        for (size_t j = 0; j < WK_ARRAY_LEN(g_pre[i].names) && g_pre[i].names[j]; j++) {
            if (strcmp(g_pre[i].names[j], name) != 0) continue;
            for (size_t k = 0; k < WK_ARRAY_LEN(g_pre[i].regex) && g_pre[i].regex[k]; k++) {
                enum wk_status st = wk__bpe_add_regex(tok, g_pre[i].regex[k]);
                if (st) return st == WK_E_FORMAT ? WK_E_INTERNAL : st;
            }
            return WK_OK;
        }
    }
    return WK_E_NOT_FOUND;
}

const char *wk__bpe_gpt2_regex(void)
{
    return RE_GPT2;
}

void wk__bpe_deinit(struct wk__bpe *bpe)
{
    for (int32_t i = 0; i < bpe->n_regex; i++) pcre2_code_free(bpe->regex[i]);
    wk_free(bpe->merges);
    memset(bpe, 0, sizeof *bpe);
}

/* ------------------------------------------------------------- encode */

struct frag {
    size_t off, len;
};

struct frags {
    struct frag *v;
    size_t n, cap;
};

static bool frags_push(struct frags *f, size_t off, size_t len)
{
    if (len == 0) return true;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 64;
        struct frag *v = wk_realloc(f->v, cap * sizeof *v);
        if (!v) return false;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (struct frag){off, len};
    return true;
}

/* Splits each fragment of in by re into matches and gaps, into out. */
static enum wk_status split(pcre2_code *re, const char *text, const struct frags *in,
                            struct frags *out)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return WK_E_NOMEM;
    enum wk_status st = WK_OK;
    out->n = 0;
    for (size_t i = 0; i < in->n && !st; i++) {
        PCRE2_SPTR s = (PCRE2_SPTR)(text + in->v[i].off);
        size_t len = in->v[i].len, pos = 0, gap = 0;
        while (pos <= len) {
            int rc = pcre2_match(re, s, len, pos, 0, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) /* JIT stack or match limits: retry without JIT */
                rc = pcre2_match(re, s, len, pos, PCRE2_NO_JIT, md, NULL);
            if (rc < 0) break; /* still failing: the rest stays one fragment */
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) { /* empty match: step over one character */
                if (ms >= len) break;
                pos = ms + wk__utf8_char_len((const char *)s + ms, len - ms);
                continue;
            }
            if (!frags_push(out, in->v[i].off + gap, ms - gap) ||
                !frags_push(out, in->v[i].off + ms, me - ms)) {
                st = WK_E_NOMEM;
                break;
            }
            gap = pos = me;
        }
        if (!st && !frags_push(out, in->v[i].off + gap, len - gap)) st = WK_E_NOMEM;
    }
    pcre2_match_data_free(md);
    return st;
}

static bool bpe_pair(const void *ctx, const char *text, const struct wk__sym *l,
                     const struct wk__sym *r, float *score, int32_t *id)
{
    (void)text;
    const struct wk__bpe *bpe = ctx;
    int32_t rank;
    if (l->id < 0 || r->id < 0 || !merge_find(bpe, l->id, r->id, &rank, id)) return false;
    *score = -(float)rank; /* exact: ranks are below 2^24 */
    return true;
}

/* Byte-level: one symbol per byte, through the GPT-2 character table. A
 * byte the vocabulary has no piece for (bytes that never occur in UTF-8,
 * such as 0xFF, are missing from some vocabularies) becomes the pieces of
 * U+FFFD, the replacement character, as decoding the text would: never the
 * unknown token, which may be a control token (SmolLM2's is
 * <|endoftext|>). syms holds 3 per byte. */
static int32_t byte_symbols(const struct wk_tokenizer *tok, const char *s, size_t n,
                            struct wk__sym *syms)
{
    static const uint8_t fffd[3] = {0xef, 0xbf, 0xbd};
    const int32_t *ids = tok->bpe.byte_char_ids;
    int32_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[(uint8_t)s[i]];
        if (id >= 0) {
            syms[k++] = (struct wk__sym){.off = (uint32_t)i, .n = 1, .id = id};
        } else if (ids[fffd[0]] >= 0 && ids[fffd[1]] >= 0 && ids[fffd[2]] >= 0) {
            for (int j = 0; j < 3; j++)
                syms[k++] = (struct wk__sym){.off = (uint32_t)i, .n = 1, .id = ids[fffd[j]]};
        }
    }
    return k;
}

/* Character-level: one symbol per UTF-8 character that is a piece; a
 * character outside the vocabulary becomes its <0xNN> byte pieces (byte
 * fallback) or the unknown piece. */
static int32_t char_symbols(const struct wk_tokenizer *tok, const char *s, size_t n,
                            struct wk__sym *syms)
{
    int32_t k = 0;
    for (size_t off = 0; off < n;) {
        uint32_t len = wk__utf8_char_len(s + off, n - off);
        int32_t id = wk_tokenizer_find(tok, s + off, len);
        if (id >= 0) {
            syms[k++] = (struct wk__sym){.off = (uint32_t)off, .n = len, .id = id};
        } else if (tok->byte_fallback) {
            for (uint32_t j = 0; j < len; j++)
                syms[k++] = (struct wk__sym){.off = (uint32_t)(off + j), .n = 1,
                                             .id = tok->byte_ids[(uint8_t)s[off + j]]};
        } else if (tok->unk >= 0) { /* tokenizers' BPE without byte fallback */
            syms[k++] = (struct wk__sym){.off = (uint32_t)off, .n = len, .id = tok->unk};
        }
        off += len;
    }
    return k;
}

static enum wk_status encode_fragment(const struct wk_tokenizer *tok, const char *s, size_t n,
                                      struct wk__sym *syms, struct wk_tokens *out)
{
    if (tok->ignore_merges && tok->byte_level) {
        /* a fragment that is itself a piece is taken whole (Llama 3) */
        char mapped[256];
        size_t m = 0;
        for (size_t i = 0; i < n && m + 2 <= sizeof mapped; i++)
            m += cp_to_utf8(byte_to_cp((uint8_t)s[i]), mapped + m);
        int32_t id = m + 2 <= sizeof mapped ? wk_tokenizer_find(tok, mapped, m) : -1;
        if (id >= 0) return wk_tokens_push(out, id);
    }
    int32_t n_sym = tok->byte_level ? byte_symbols(tok, s, n, syms) : char_symbols(tok, s, n, syms);
    for (int32_t i = 0; i < n_sym; i++) {
        syms[i].prev = i - 1;
        syms[i].next = i + 1 < n_sym ? i + 1 : -1;
    }
    enum wk_status st = wk__merge_symbols(s, syms, n_sym, bpe_pair, &tok->bpe);
    for (int32_t i = 0; !st && n_sym > 0 && i >= 0; i = syms[i].next)
        if (syms[i].id >= 0) st = wk_tokens_push(out, syms[i].id);
    return st;
}

enum wk_status wk__bpe_encode(const struct wk_tokenizer *tok, const char *raw, size_t raw_len,
                              struct wk_tokens *out)
{
    const char *text = raw;
    size_t len = raw_len;
    char *escaped = NULL;
    if (tok->escape_spaces) { /* SentencePiece-style: ' ' -> '▁' (and a prefix) */
        escaped = wk_malloc(3 * raw_len + 4);
        if (!escaped) return WK_E_NOMEM;
        len = 0;
        if (tok->add_space_prefix) memcpy(escaped, "\xe2\x96\x81", 3), len = 3;
        for (size_t i = 0; i < raw_len; i++) {
            if (raw[i] == ' ') memcpy(escaped + len, "\xe2\x96\x81", 3), len += 3;
            else escaped[len++] = raw[i];
        }
        text = escaped;
    }
    struct frags a = {0}, b = {0};
    struct wk__sym *syms = NULL;
    enum wk_status st = frags_push(&a, 0, len) ? WK_OK : WK_E_NOMEM;
    for (int32_t r = 0; !st && r < tok->bpe.n_regex; r++) {
        st = split(tok->bpe.regex[r], text, &a, &b);
        struct frags t = a;
        a = b;
        b = t;
    }
    size_t longest = 0;
    for (size_t i = 0; i < a.n; i++) longest = WK_MAX(longest, a.v[i].len);
    if (!st && !(syms = wk_malloc((3 * longest + 1) * sizeof *syms))) st = WK_E_NOMEM;
    for (size_t i = 0; !st && i < a.n; i++)
        st = encode_fragment(tok, text + a.v[i].off, a.v[i].len, syms, out);
    wk_free(syms);
    wk_free(a.v);
    wk_free(b.v);
    wk_free(escaped);
    return st;
}
