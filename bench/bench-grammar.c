/*
 * bench-grammar.c - the grammar engine (src/runtime/wk_grammar.h): mask
 * speed on a real tokenizer, and a sampler used by tests/grammar/run.
 *
 *   bench-grammar bench MODEL.gguf [REPEATS]
 *       With the model's tokenizer: builds the token vocabulary, compiles
 *       a few JSON Schemas (a person; an order with line items, an enum
 *       status and a date-time; any JSON object), then drives a matcher
 *       along a fixed valid document token by token (the document
 *       tokenized by the model's tokenizer), timing
 *       wk_grammar_matcher_mask at every step. Prints one JSON line per
 *       schema: compile, matcher (precomputation) and vocab times in ms,
 *       mask p50 / p99 / max in microseconds.
 *
 *   bench-grammar cases MODEL.gguf
 *       The bench's schemas and documents with the documents' token ids
 *       (JSON lines), for bench/grammar-anchors.
 *
 *   bench-grammar sample SCHEMAS.jsonl SEEDS N [MAXTOK]
 *       For each line {"id": ..., "schema": ...}: compiles the schema and,
 *       for each seed 1..SEEDS, samples N texts with a synthetic byte-level
 *       vocabulary (the 256 single bytes, JSON-ish multi-byte tokens and an
 *       end token), choosing uniformly among the allowed tokens with a bias
 *       to finish. Prints one JSON line per schema: {"id", "compiled",
 *       "error", "samples": [text, ...], "unfinished": n}.
 */
#include "../src/runtime/wk_grammar.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- sampling */

static const char *const EXTRA[] = {
    "{\"", "\":", "\": ", "\", \"", "\",\"", "\"}", "\"]", "[\"", "true", "false", "null", "0", "1",
    "12", "-", ".", "e", "E", "+", "\\n", "\\\"", "\\u00", "\\\\", ", ", "}, {", "[]", "{}", "a", "ab",
    "foo", "bar", " ", "@", "T", "Z", ":", "2020-", "01", "-0", "10", "name", "id", "value", "x",
    "é", "日本", "😀", "\"a\"", "\"b\"", "}}", "]]", "],", "},", "[[", "[{", "0.", "00", "99",
};

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct synth {
    struct wk_grammar_vocab *v;
    const char **tok;
    size_t *len;
    int32_t n, eog;
    uint8_t *closer; /* tokens made only of " ] } */
};

static int synth_init(struct synth *s)
{
    int32_t n_extra = (int32_t)(sizeof EXTRA / sizeof EXTRA[0]);
    s->n = 256 + n_extra + 1;
    s->tok = calloc((size_t)s->n, sizeof *s->tok);
    s->len = calloc((size_t)s->n, sizeof *s->len);
    s->closer = calloc((size_t)s->n, 1);
    static char bytes[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (char)i;
        s->tok[i] = &bytes[i];
        s->len[i] = 1;
    }
    for (int32_t i = 0; i < n_extra; i++) {
        s->tok[256 + i] = EXTRA[i];
        s->len[256 + i] = strlen(EXTRA[i]);
    }
    s->eog = s->n - 1;
    s->tok[s->eog] = "";
    s->len[s->eog] = 0;
    for (int32_t i = 0; i < s->n; i++) {
        bool c = s->len[i] > 0;
        for (size_t k = 0; k < s->len[i]; k++) c &= strchr("\"]}", s->tok[i][k]) != NULL;
        s->closer[i] = c;
    }
    struct wk_error err;
    if (wk_grammar_vocab_create_from_bytes(s->tok, s->len, s->n, &s->eog, 1, &s->v, &err) != WK_OK) {
        fprintf(stderr, "vocab: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* One sample into out (a JSON array); returns 1 unfinished, -1 error. */
static int sample_one(struct synth *s, struct wk_grammar_matcher *m, uint64_t *seed, int max_tok,
                      json_t *out, char **why)
{
    int32_t nw = (s->n + 31) / 32;
    uint32_t *bits = malloc((size_t)nw * 4);
    int32_t *allowed = malloc((size_t)s->n * sizeof *allowed), *closers = malloc((size_t)s->n * sizeof *closers);
    char *text = NULL;
    size_t n_text = 0;
    int rc = 1;
    wk_grammar_matcher_reset(m);
    for (int step = 0; step < max_tok; step++) {
        if (wk_grammar_matcher_mask(m, bits) != WK_OK) {
            *why = strdup(wk_grammar_matcher_error(m));
            rc = -1;
            break;
        }
        int32_t na = 0, nc = 0;
        bool eog = bits[s->eog >> 5] >> (s->eog & 31) & 1;
        for (int32_t i = 0; i < s->n; i++)
            if (i != s->eog && (bits[i >> 5] >> (i & 31) & 1)) {
                allowed[na++] = i;
                if (s->closer[i]) closers[nc++] = i;
            }
        double r = (double)(rng(seed) >> 11) / 9007199254740992.0;
        double p_end = step > 40 ? 0.9 : 0.4;
        if (eog && (na == 0 || r < p_end)) {
            rc = 0;
            break;
        }
        if (na == 0) {
            *why = strdup("dead end: no token allowed and the text is not complete");
            rc = -1;
            break;
        }
        int32_t id;
        double r2 = (double)(rng(seed) >> 11) / 9007199254740992.0;
        if (nc > 0 && step > 30 && r2 < (step > 200 ? 0.95 : 0.6)) id = closers[rng(seed) % (uint64_t)nc];
        else id = allowed[rng(seed) % (uint64_t)na];
        if (wk_grammar_matcher_accept(m, id) != WK_OK) {
            *why = strdup("a token from the mask was refused by accept");
            rc = -1;
            break;
        }
        text = realloc(text, n_text + s->len[id] + 1);
        memcpy(text + n_text, s->tok[id], s->len[id]);
        n_text += s->len[id];
    }
    if (rc == 0) {
        json_t *str = json_stringn(text ? text : "", n_text);
        if (!str) {
            *why = strdup("output is not valid UTF-8");
            rc = -1;
        } else {
            json_array_append_new(out, str);
        }
    }
    free(text), free(bits), free(allowed), free(closers);
    return rc;
}

static int cmd_sample(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s sample SCHEMAS.jsonl SEEDS N [MAXTOK]\n", argv[0]);
        return 2;
    }
    int seeds = atoi(argv[3]), n = atoi(argv[4]), max_tok = argc > 5 ? atoi(argv[5]) : 3000;
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    struct synth s;
    if (synth_init(&s)) return 1;
    char *line = NULL;
    size_t cap = 0;
    long line_no = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        line_no++;
        json_t *in = json_loads(line, JSON_ALLOW_NUL, &je);
        if (!in) {
            printf("{\"line\": %ld, \"compiled\": false, \"error\": \"unreadable line\"}\n", line_no);
            continue;
        }
        json_t *res = json_object();
        json_object_set(res, "id", json_object_get(in, "id"));
        struct wk_grammar *g = NULL;
        struct wk_grammar_matcher *m = NULL;
        struct wk_error err = {0};
        enum wk_status st = wk_grammar_from_json_schema(json_object_get(in, "schema"), &g, &err);
        if (st == WK_OK) st = wk_grammar_matcher_create(g, s.v, &m, &err);
        json_object_set_new(res, "compiled", json_boolean(st == WK_OK));
        if (st != WK_OK) {
            json_object_set_new(res, "status", json_string(wk_status_str(st)));
            json_object_set_new(res, "error", json_string(err.msg));
        } else {
            json_t *samples = json_array(), *errors = json_array();
            int unfinished = 0;
            for (int seed = 1; seed <= seeds; seed++) {
                uint64_t r = (uint64_t)seed * 1000003u;
                for (int i = 0; i < n; i++) {
                    char *why = NULL;
                    int rc = sample_one(&s, m, &r, max_tok, samples, &why);
                    if (rc > 0) unfinished++;
                    if (rc < 0) json_array_append_new(errors, json_string(why ? why : "?"));
                    free(why);
                }
            }
            json_object_set_new(res, "samples", samples);
            json_object_set_new(res, "sample_errors", errors);
            json_object_set_new(res, "unfinished", json_integer(unfinished));
        }
        char *outs = json_dumps(res, JSON_COMPACT);
        printf("%s\n", outs);
        fflush(stdout);
        free(outs);
        json_decref(res);
        json_decref(in);
        wk_grammar_matcher_free(m);
        wk_grammar_free(g);
    }
    free(line);
    fclose(f);
    wk_grammar_vocab_free(s.v);
    free(s.tok), free(s.len), free(s.closer);
    return 0;
}

/* ---------------------------------------------------------------- bench */

struct bcase {
    const char *name, *schema, *doc;
};

static const struct bcase CASES[] = {
    {"person",
     "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": "
     "\"integer\", \"minimum\": 0, \"maximum\": 150}, \"email\": {\"type\": \"string\", \"format\": "
     "\"email\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 10}}, "
     "\"required\": [\"name\", \"age\", \"email\", \"tags\"]}",
     "{\"name\": \"Ada Lovelace\", \"age\": 36, \"email\": \"ada.lovelace@example.org\", \"tags\": "
     "[\"mathematician\", \"writer\", \"analytical engine\"]}"},
    {"order",
     "{\"type\": \"object\", \"properties\": {\"order_id\": {\"type\": \"string\", \"pattern\": "
     "\"^ORD-[0-9]{6}$\"}, \"status\": {\"enum\": [\"pending\", \"paid\", \"shipped\", \"delivered\", "
     "\"cancelled\"]}, \"created_at\": {\"type\": \"string\", \"format\": \"date-time\"}, \"customer\": "
     "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"address\": {\"type\": "
     "\"string\"}}, \"required\": [\"name\", \"address\"]}, \"items\": {\"type\": \"array\", "
     "\"minItems\": 1, \"items\": {\"type\": \"object\", \"properties\": {\"sku\": {\"type\": "
     "\"string\"}, \"quantity\": {\"type\": \"integer\", \"minimum\": 1}, \"price\": {\"type\": "
     "\"number\", \"minimum\": 0}}, \"required\": [\"sku\", \"quantity\", \"price\"]}}, \"note\": "
     "{\"type\": \"string\"}}, \"required\": [\"order_id\", \"status\", \"created_at\", \"customer\", "
     "\"items\"]}",
     "{\"order_id\": \"ORD-123456\", \"status\": \"shipped\", \"created_at\": "
     "\"2024-03-15T10:30:00Z\", \"customer\": {\"name\": \"Grace Hopper\", \"address\": \"1 Navy "
     "Way, Arlington, VA\"}, \"items\": [{\"sku\": \"KB-001\", \"quantity\": 2, \"price\": 49.99}, "
     "{\"sku\": \"MS-042\", \"quantity\": 1, \"price\": 19.5}], \"note\": \"Leave at the front "
     "desk, please.\"}"},
    {"any-object", NULL,
     "{\"model\": \"qwen2.5-coder\", \"created\": 1718000000, \"choices\": [{\"index\": 0, "
     "\"message\": {\"role\": \"assistant\", \"content\": \"Hello! How can I help you today?\"}, "
     "\"finish_reason\": \"stop\"}], \"usage\": {\"prompt_tokens\": 12, \"completion_tokens\": 9, "
     "\"ratio\": 0.75, \"cached\": null, \"ok\": true}}"},
};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmd_bench(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s bench MODEL.gguf [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    struct wk_gguf *gg;
    struct wk_tokenizer *tok;
    struct wk_error err;
    if (wk_gguf_open(argv[2], &gg, &err) || wk_tokenizer_from_gguf(gg, &tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int64_t t0 = wk_time_ns();
    struct wk_grammar_vocab *v;
    if (wk_grammar_vocab_create(tok, &v, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double vocab_ms = (double)(wk_time_ns() - t0) / 1e6;
    int32_t nw = (wk_grammar_vocab_n_tokens(v) + 31) / 32;
    uint32_t *bits = malloc((size_t)nw * 4);
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const struct bcase *bc = &CASES[ci];
        struct wk_tokens ids = {0};
        wk_tokenizer_encode(tok, bc->doc, strlen(bc->doc), false, &ids);
        double *t = malloc(sizeof(double) * (size_t)(ids.n + 1) * (size_t)repeats);
        int64_t nt = 0;
        double compile_ms = 1e30, matcher_ms = 1e30;
        int ok = 1;
        for (int rep = 0; rep < repeats && ok; rep++) {
            int64_t a = wk_time_ns();
            struct wk_grammar *g = NULL;
            json_t *schema = bc->schema ? json_loads(bc->schema, 0, NULL) : NULL;
            enum wk_status st = schema ? wk_grammar_from_json_schema(schema, &g, &err) : wk_grammar_json_object(&g, &err);
            json_decref(schema);
            int64_t b = wk_time_ns();
            struct wk_grammar_matcher *m = NULL;
            if (st == WK_OK) st = wk_grammar_matcher_create(g, v, &m, &err);
            int64_t c = wk_time_ns();
            if (st != WK_OK) {
                fprintf(stderr, "%s: %s\n", bc->name, err.msg);
                return 1;
            }
            if ((double)(b - a) / 1e6 < compile_ms) compile_ms = (double)(b - a) / 1e6;
            if ((double)(c - b) / 1e6 < matcher_ms) matcher_ms = (double)(c - b) / 1e6;
            for (int64_t i = 0; i <= ids.n; i++) {
                int64_t x = wk_time_ns();
                wk_grammar_matcher_mask(m, bits);
                t[nt++] = (double)(wk_time_ns() - x) / 1e3;
                if (i == ids.n) {
                    if (!wk_grammar_matcher_is_complete(m)) ok = 0;
                    break;
                }
                int32_t id = ids.ids[i];
                if (!(bits[id >> 5] >> (id & 31) & 1) || wk_grammar_matcher_accept(m, id) != WK_OK) {
                    fprintf(stderr, "%s: token %lld (%d) refused\n", bc->name, (long long)i, id);
                    ok = 0;
                    break;
                }
            }
            wk_grammar_matcher_free(m);
            wk_grammar_free(g);
        }
        qsort(t, (size_t)nt, sizeof *t, cmp_d);
        printf("{\"schema\": \"%s\", \"ok\": %s, \"tokens\": %lld, \"compile_ms\": %.3f, \"matcher_ms\": %.2f, "
               "\"vocab_ms\": %.1f, \"mask_us_p50\": %.2f, \"mask_us_p99\": %.2f, \"mask_us_max\": %.2f}\n",
               bc->name, ok ? "true" : "false", (long long)ids.n, compile_ms, matcher_ms, vocab_ms,
               t[nt / 2], t[(int64_t)(nt * 0.99)], t[nt - 1]);
        free(t);
        wk_tokens_deinit(&ids);
    }
    free(bits);
    wk_grammar_vocab_free(v);
    wk_tokenizer_destroy(tok);
    wk_gguf_close(gg);
    return 0;
}

/* The bench cases with the document's token ids, one JSON line each, for
 * bench/grammar-anchors (so other engines walk the very same tokens). */
static int cmd_cases(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s cases MODEL.gguf\n", argv[0]);
        return 2;
    }
    struct wk_gguf *gg;
    struct wk_tokenizer *tok;
    struct wk_error err;
    if (wk_gguf_open(argv[2], &gg, &err) || wk_tokenizer_from_gguf(gg, &tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
        const struct bcase *bc = &CASES[ci];
        struct wk_tokens ids = {0};
        wk_tokenizer_encode(tok, bc->doc, strlen(bc->doc), false, &ids);
        json_t *o = json_object(), *a = json_array();
        for (int64_t i = 0; i < ids.n; i++) json_array_append_new(a, json_integer(ids.ids[i]));
        json_object_set_new(o, "name", json_string(bc->name));
        json_object_set_new(o, "schema", bc->schema ? json_loads(bc->schema, 0, NULL) : json_pack("{s:s}", "type", "object"));
        json_object_set_new(o, "doc", json_string(bc->doc));
        json_object_set_new(o, "ids", a);
        char *t = json_dumps(o, JSON_COMPACT);
        printf("%s\n", t);
        free(t);
        json_decref(o);
        wk_tokens_deinit(&ids);
    }
    wk_tokenizer_destroy(tok);
    wk_gguf_close(gg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "cases")) return cmd_cases(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "sample")) return cmd_sample(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "bench")) return cmd_bench(argc, argv);
    fprintf(stderr, "usage: %s bench MODEL.gguf [REPEATS] | sample SCHEMAS.jsonl SEEDS N [MAXTOK]\n", argv[0]);
    return 2;
}
