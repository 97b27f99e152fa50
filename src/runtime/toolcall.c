/*
 * toolcall.c - tool-call formats: detection from a chat template's text,
 * names, and the streaming parser that cuts tool-call blocks out of
 * generated text (wk_toolcall.h; toolcall_block.c reads a block's calls).
 *
 * The parser runs byte by byte over two states:
 *   text   the answer's content. A byte that may start an opening marker is
 *          held (hold[], at most a marker's length); the next bytes either
 *          complete the marker (a block starts) or show it is not one, and
 *          the held bytes go out as content. While the text since the start
 *          or since the last call is whitespace only (at_gap), that gap is
 *          held too: a block after it drops it, anything else sends it on.
 *          LLAMA3 / JSON also start a block at '{' (JSON: '[') at a gap.
 *   block  the block's text collects in blk until it ends: at the closing
 *          marker (tag formats), or where the JSON value after the marker
 *          (MISTRAL, <|python_tag|>, bare '{') closes, counted by brackets
 *          outside strings. Then wk_toolcall_parse_block reads it: calls go
 *          to the sink; a malformed block goes out as content, with the gap
 *          before it.
 * Each byte is looked at a bounded number of times (a closing marker is
 * checked against the tail of blk; a failed opening marker rescans at most
 * its own held bytes), so any split of the input costs linear time.
 */
#include "wk_toolcall.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ detection */

static const char *const g_names[WK_TOOLCALL_N_FORMATS] = {
    "none", "hermes", "llama3", "mistral", "glm45", "gemma", "json", "qwen3-coder", "tag",
};

const char *wk_toolcall_format_name(enum wk_toolcall_format fmt)
{
    return (unsigned)fmt < WK_TOOLCALL_N_FORMATS ? g_names[fmt] : "?";
}

enum wk_status wk_toolcall_format_from_name(const char *name, enum wk_toolcall_format *out,
                                            struct wk_error *err)
{
    for (int i = 0; name && i < WK_TOOLCALL_N_FORMATS; i++) {
        if (strcasecmp(name, g_names[i]) == 0) {
            *out = (enum wk_toolcall_format)i;
            return WK_OK;
        }
    }
    return wk_error_set(err, WK_E_NOT_FOUND, "unknown tool-call format '%s'",
                        name ? name : "(null)");
}

static bool has(const char *s, size_t n, const char *lit)
{
    return memmem(s, n, lit, strlen(lit)) != NULL;
}

/*
 * An Ollama TEMPLATE's tool-call tag, as Ollama's tools.parseTag reads it:
 * the first text that is not only whitespace after {{ if .ToolCalls }}
 * (actions skipped), cut at its first '{' and trimmed, into tag (cap
 * bytes; "" for a tag "{": JSON). Returns false when the template has no
 * .ToolCalls; a template that uses .ToolCalls outside any if has no tag
 * either (""). A tag of cap bytes or more is cut (the caller refuses it).
 */
static bool gotmpl_tag(const char *t, size_t n, char *tag, size_t cap)
{
    const char *end = t + n;
    bool any = false;
    tag[0] = '\0';
    for (const char *at = t; (at = memmem(at, (size_t)(end - at), ".ToolCalls", 10)) != NULL;
         at += 10) {
        any = true;
        const char *a = NULL; /* the action around it: "{{" before it, no "}}" between */
        for (const char *q = at; q > t + 1 && at - q < 256 && !a; q--) {
            if (q[-1] == '}' && q[-2] == '}') break;
            if (q[-1] == '{' && q[-2] == '{') a = q;
        }
        if (!a) continue;
        while (a < at && (*a == '-' || *a == ' '))
            a++;
        if (at - a >= 5 && memcmp(a, "else ", 5) == 0)
            for (a += 5; a < at && *a == ' ';)
                a++;
        if (at - a < 3 || memcmp(a, "if ", 3) != 0) continue;
        const char *s = memmem(at, (size_t)(end - at), "}}", 2);
        while (s) {
            s += 2;
            const char *next = memmem(s, (size_t)(end - s), "{{", 2);
            if (next == s) { /* an action: skipped; at an end or else no text came first (findTextNode stops) */
                const char *k = s + 2;
                while (k < end && (*k == '-' || *k == ' ')) k++;
                if ((end - k >= 3 && !memcmp(k, "end", 3) && (k + 3 == end || !isalnum((unsigned char)k[3]))) ||
                    (end - k >= 4 && !memcmp(k, "else", 4) && (k + 4 == end || !isalnum((unsigned char)k[4]))))
                    return true;
                s = memmem(s, (size_t)(end - s), "}}", 2);
                continue;
            }
            const char *text_end = next ? next : end, *e = text_end;
            while (s < e && isspace((unsigned char)*s))
                s++;
            if (s == e && next) { /* whitespace only: Ollama's findTextNode skips it */
                s = memmem(next, (size_t)(end - next), "}}", 2);
                continue;
            }
            const char *brace = e > s ? memchr(s, '{', (size_t)(e - s)) : NULL;
            if (brace) e = brace;
            while (e > s && isspace((unsigned char)e[-1]))
                e--;
            size_t l = (size_t)(e - s) < cap - 1 ? (size_t)(e - s) : cap - 1;
            memcpy(tag, s, l);
            tag[l] = '\0';
            return true;
        }
        return true;
    }
    return any;
}

/*
 * The rules, first match wins. They follow llama.cpp's chat.cpp (which
 * looks for <tool_call>, [TOOL_CALLS], <|start_header_id|>ipython
 * <|end_header_id|>, <|python_tag|>, >>>all, " functools[", <function=
 * with <|start_header_id|>) and Ollama (a TEMPLATE rendering .ToolCalls
 * with no tag parses JSON objects), with the more specific markers first:
 *   <tool_call> and <arg_key>                       GLM45
 *   <tool_call>, <function= and <parameter=         QWEN3_CODER
 *   <|tool_call> or <start_function_call>           GEMMA
 *   [TOOL_CALLS]                                    MISTRAL
 *   <tool_call> or <tool_calls>, with a JSON
 *   "name" key in the text                          HERMES (MiniMax-M3's
 *                                                   namespaced XML has none)
 *   <|tool_call|> (Granite 3.x)                     TAG, no closing marker
 *   <|START_ACTION|> (Command R7B, Cohere2)         TAG to <|END_ACTION|>
 *   >>>all, " functools[", or <|start_header_id|>
 *   with <function=                                 NONE (functionary,
 *                                                   firefunction syntaxes)
 *   <|python_tag|>, <|start_header_id|>ipython<|end_header_id|>, or
 *   <|start_header_id|> with "tools" (.Tools) and "parameters"   LLAMA3
 *   an Ollama TEMPLATE using .ToolCalls whose tool-call text starts
 *   with '{' or '[' (what Ollama's parseTag reads as the tag "{")   JSON
 *   one whose tool-call text starts with another tag         TAG
 *   anything else                                   NONE
 */
enum wk_toolcall_format wk_toolcall_detect(const char *t, size_t n)
{
    char open[WK_TOOLCALL_MAX_TAG + 3], close[WK_TOOLCALL_MAX_TAG + 3];
    return wk_toolcall_detect_markers(t, n, open, close);
}

/* A TAG format's markers into open and close. */
static enum wk_toolcall_format tag_markers(const char *o, const char *c, char *open, char *close)
{
    strcpy(open, o);
    strcpy(close, c);
    return WK_TOOLCALL_TAG;
}

/* An Ollama TEMPLATE's own tag (gotmpl_tag) as TAG markers, JSON for none,
 * NONE when the template has no .ToolCalls. */
static enum wk_toolcall_format gotmpl_markers(const char *t, size_t n, char *open, char *close)
{
    char tag[WK_TOOLCALL_MAX_TAG + 2];
    if (!gotmpl_tag(t, n, tag, sizeof tag)) return WK_TOOLCALL_NONE;
    size_t l = strlen(tag);
    while (l && (tag[l - 1] == '[' || isspace((unsigned char)tag[l - 1]))) /* a list of calls follows */
        tag[--l] = '\0';
    if (!l) return WK_TOOLCALL_JSON;
    if (l > WK_TOOLCALL_MAX_TAG) return WK_TOOLCALL_NONE;
    memcpy(open, tag, l + 1);
    /* <x ...> closed by </x>, where the template writes it; a Markdown fence by its end */
    if (l >= 3 && strstr(tag, "```")) {
        strcpy(close, "```");
    } else if (tag[0] == '<' && tag[l - 1] == '>' && l > 2) {
        size_t name = strcspn(tag + 1, " >");
        snprintf(close, WK_TOOLCALL_MAX_TAG + 3, "</%.*s>", (int)name, tag + 1);
        if (!memmem(t, n, close, strlen(close))) close[0] = '\0';
    }
    return WK_TOOLCALL_TAG;
}

enum wk_toolcall_format wk_toolcall_detect_markers(const char *t, size_t n, char *open, char *close)
{
    open[0] = close[0] = '\0';
    if (!t || !n) return WK_TOOLCALL_NONE;
    bool tool_call = has(t, n, "<tool_call>");
    if (tool_call && has(t, n, "<arg_key>")) return WK_TOOLCALL_GLM45;
    if (tool_call && has(t, n, "<function=") && has(t, n, "<parameter="))
        return WK_TOOLCALL_QWEN3_CODER;
    if (has(t, n, "<|tool_call>") || has(t, n, "<start_function_call>")) return WK_TOOLCALL_GEMMA;
    if (has(t, n, "[TOOL_CALLS]")) return WK_TOOLCALL_MISTRAL;
    if ((tool_call || has(t, n, "<tool_calls>")) &&
        (has(t, n, "\"name\"") || has(t, n, "\\\"name\\\"")))
        return WK_TOOLCALL_HERMES;
    /* Granite 3.x: <|tool_call|> and a JSON list; Command R7B, Cohere2: <|START_ACTION|>[{"tool_call_id",
     * "tool_name", "parameters"}]<|END_ACTION|> (llama.cpp's chat.cpp parses both) */
    if (has(t, n, "<|tool_call|>")) return tag_markers("<|tool_call|>", "", open, close);
    if (has(t, n, "<|START_ACTION|>")) return tag_markers("<|START_ACTION|>", "<|END_ACTION|>", open, close);
    bool header = has(t, n, "<|start_header_id|>");
    if (has(t, n, ">>>all") || has(t, n, " functools[") || (header && has(t, n, "<function=")))
        return WK_TOOLCALL_NONE;
    if (has(t, n, "<|python_tag|>") || has(t, n, "<|start_header_id|>ipython<|end_header_id|>") ||
        (header && (has(t, n, "tools") || has(t, n, ".Tools")) && has(t, n, "parameters")))
        return WK_TOOLCALL_LLAMA3;
    return gotmpl_markers(t, n, open, close);
}

/* ---------------------------------------------------------------- parser */

struct tc_buf {
    char *p;
    size_t n, cap;
};

static enum wk_status buf_add(struct tc_buf *b, const char *s, size_t n)
{
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n)
            cap *= 2;
        char *p = wk_realloc(b->p, cap);
        if (!p) return WK_E_NOMEM;
        b->p = p, b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    return WK_OK;
}

enum tc_block { B_TAG, B_HEAD, B_WAIT, B_JSON };

#define MAX_MARKERS 2
#define MAX_HEAD    512 /* bytes of MISTRAL's name[CALL_ID]id before [ARGS] */

struct wk_toolcall_parser {
    enum wk_toolcall_format fmt;
    json_t *tools;
    const char *open[MAX_MARKERS], *close[MAX_MARKERS];
    int n_open;
    bool bare;       /* LLAMA3 / JSON: '{' at a gap starts a block */
    char topen[WK_TOOLCALL_MAX_TAG + 1], tclose[WK_TOOLCALL_MAX_TAG + 3]; /* TAG's markers */
    bool first[256]; /* bytes that start an opening marker */

    bool at_gap;     /* only whitespace since the start or the last call */
    bool after_call; /* the last thing out was a call */
    struct tc_buf gap;
    char hold[32];
    size_t n_hold;

    bool in_block;
    enum tc_block bstate;
    const char *bclose; /* B_TAG: the closing marker */
    size_t head;        /* B_HEAD: bytes of name seen */
    int depth;          /* B_JSON */
    bool in_str, esc;
    struct tc_buf blk;

    struct tc_buf out; /* content settled, not yet given to the sink */
    unsigned flags;
    int n_calls, n_blocks;
    enum wk_status failed;
};

enum wk_status wk_toolcall_parser_create(enum wk_toolcall_format fmt,
                                         struct wk_toolcall_parser **out, struct wk_error *err)
{
    *out = NULL;
    if ((unsigned)fmt >= WK_TOOLCALL_N_FORMATS)
        return wk_error_set(err, WK_E_INVALID, "tool-call format %d out of range", (int)fmt);
    struct wk_toolcall_parser *p = wk_calloc(1, sizeof *p);
    if (!p) return wk_error_set(err, WK_E_NOMEM, "out of memory");
    p->fmt = fmt;
    switch (fmt) {
    case WK_TOOLCALL_HERMES:
        p->open[1] = "<tool_calls>", p->close[1] = "</tool_calls>", p->n_open = 2;
        /* fall through */
    case WK_TOOLCALL_GLM45:
    case WK_TOOLCALL_QWEN3_CODER:
        p->open[0] = "<tool_call>", p->close[0] = "</tool_call>";
        if (!p->n_open) p->n_open = 1;
        break;
    case WK_TOOLCALL_MISTRAL:
        p->open[0] = "[TOOL_CALLS]", p->n_open = 1;
        break;
    case WK_TOOLCALL_GEMMA:
        p->open[0] = "<|tool_call>", p->close[0] = "<tool_call|>";
        p->open[1] = "<start_function_call>", p->close[1] = "<end_function_call>";
        p->n_open = 2;
        break;
    case WK_TOOLCALL_LLAMA3:
        p->open[0] = "<|python_tag|>", p->n_open = 1, p->bare = true;
        break;
    case WK_TOOLCALL_JSON:
        p->bare = true;
        break;
    default:
        break;
    }
    for (int i = 0; i < p->n_open; i++)
        p->first[(unsigned char)p->open[i][0]] = true;
    p->at_gap = fmt != WK_TOOLCALL_NONE;
    *out = p;
    return WK_OK;
}

enum wk_status wk_toolcall_parser_set_markers(struct wk_toolcall_parser *p, const char *open, const char *close,
                                              struct wk_error *err)
{
    size_t lo = open ? strlen(open) : 0, lc = close ? strlen(close) : 0;
    if (p->fmt != WK_TOOLCALL_TAG || !lo || lo > WK_TOOLCALL_MAX_TAG || lc > WK_TOOLCALL_MAX_TAG + 2)
        return wk_error_set(err, WK_E_INVALID, "tool-call markers: a TAG parser takes an opening tag of 1 to %d "
                            "bytes", WK_TOOLCALL_MAX_TAG);
    memcpy(p->topen, open, lo + 1);
    memcpy(p->tclose, close ? close : "", lc + 1);
    p->open[0] = p->topen, p->close[0] = lc ? p->tclose : NULL, p->n_open = 1;
    memset(p->first, 0, sizeof p->first);
    p->first[(unsigned char)open[0]] = true;
    return WK_OK;
}

void wk_toolcall_parser_free(struct wk_toolcall_parser *p)
{
    if (!p) return;
    json_decref(p->tools);
    wk_free(p->gap.p);
    wk_free(p->blk.p);
    wk_free(p->out.p);
    wk_free(p);
}

void wk_toolcall_parser_set_tools(struct wk_toolcall_parser *p, json_t *tools)
{
    json_decref(p->tools);
    p->tools = json_incref(tools);
}

unsigned wk_toolcall_parser_flags(const struct wk_toolcall_parser *p)
{
    return p->flags;
}

int wk_toolcall_parser_n_calls(const struct wk_toolcall_parser *p)
{
    return p->n_calls;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Gives the settled content to the sink. */
static enum wk_status flush_out(struct wk_toolcall_parser *p, const struct wk_toolcall_sink *sink)
{
    if (!p->out.n) return WK_OK;
    size_t n = p->out.n;
    p->out.n = 0;
    if (sink && sink->content && !sink->content(sink->user, p->out.p, n)) return WK_E_CANCELLED;
    return WK_OK;
}

/* The gap held so far turns out to be content. */
static enum wk_status end_gap(struct wk_toolcall_parser *p)
{
    p->at_gap = false;
    p->after_call = false;
    enum wk_status st = buf_add(&p->out, p->gap.p, p->gap.n);
    p->gap.n = 0;
    return st;
}

/* The block so far (and the gap before it) is content after all. */
static enum wk_status hand_back(struct wk_toolcall_parser *p)
{
    p->flags |= WK_TOOLCALL_F_MALFORMED;
    p->in_block = false;
    enum wk_status st = end_gap(p);
    if (st == WK_OK) st = buf_add(&p->out, p->blk.p, p->blk.n);
    p->blk.n = 0;
    return st;
}

static void start_block(struct wk_toolcall_parser *p, enum tc_block b, const char *close)
{
    p->in_block = true;
    p->bstate = b;
    p->bclose = close;
    p->head = 0;
    p->depth = b == B_JSON ? 1 : 0;
    p->in_str = p->esc = false;
}

/* The block in blk is complete (or, at finish, cut short): its calls out,
 * or the block back as content. */
static enum wk_status settle_block(struct wk_toolcall_parser *p,
                                   const struct wk_toolcall_sink *sink)
{
    json_t *calls;
    enum wk_status st;
    if (p->fmt == WK_TOOLCALL_TAG) { /* JSON calls between the markers */
        size_t lo = strlen(p->topen), lc = strlen(p->tclose);
        if (p->blk.n < lo || memcmp(p->blk.p, p->topen, lo) != 0) lo = 0; /* a call after the tag's first */
        size_t n = p->blk.n - lo;
        if (lc && n >= lc && memcmp(p->blk.p + p->blk.n - lc, p->tclose, lc) == 0) n -= lc;
        st = wk_toolcall_parse_block(WK_TOOLCALL_TAG, p->blk.p + lo, n, p->tools, &calls);
    } else {
        st = wk_toolcall_parse_block(p->fmt, p->blk.p, p->blk.n, p->tools, &calls);
    }
    if (st == WK_E_FORMAT) return hand_back(p);
    if (st != WK_OK) return st;
    p->in_block = false;
    p->gap.n = 0;
    st = flush_out(p, sink);
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c)
    {
        if (st != WK_OK) break;
        json_t *id = json_object_get(c, "id");
        struct wk_toolcall call = {
            .name = json_string_value(json_object_get(c, "name")),
            .arguments = json_object_get(c, "arguments"),
            .id = id ? json_string_value(id) : NULL,
            .index = p->n_calls++,
            .block = p->n_blocks,
            .raw = p->blk.p,
            .raw_len = p->blk.n,
        };
        if (sink && sink->call && !sink->call(sink->user, &call)) st = WK_E_CANCELLED;
    }
    json_decref(calls);
    p->n_blocks++;
    p->blk.n = 0;
    p->at_gap = p->after_call = true;
    return st;
}

/* 1: hold[0..n) is a whole opening marker (its index in *which); 0: the
 * first bytes of one; -1: neither. */
static int match_open(const struct wk_toolcall_parser *p, const char *hold, size_t n, int *which)
{
    int r = -1;
    for (int i = 0; i < p->n_open; i++) {
        size_t l = strlen(p->open[i]);
        if (n <= l && memcmp(hold, p->open[i], n) == 0) {
            if (n == l) {
                *which = i;
                return 1;
            }
            r = 0;
        }
    }
    return r;
}

/* A whole opening marker was matched: the block it starts. */
static void open_block(struct wk_toolcall_parser *p, int which)
{
    if (p->fmt == WK_TOOLCALL_MISTRAL)
        start_block(p, B_HEAD, NULL);
    else if (p->fmt == WK_TOOLCALL_LLAMA3 || (p->fmt == WK_TOOLCALL_TAG && !p->close[which]))
        start_block(p, B_WAIT, NULL);
    else
        start_block(p, B_TAG, p->close[which]);
}

/* One byte of text (not in a block). */
static enum wk_status text_byte(struct wk_toolcall_parser *p, char c)
{
    enum wk_status st = WK_OK;
    if (p->n_hold == 0) {
        if (p->at_gap) {
            if (is_ws(c) || (c == ';' && p->bare && p->after_call)) {
                if (p->gap.n >=
                    WK_TOOLCALL_MAX_BLOCK) { /* bounded: a huge gap goes out as content */
                    st = buf_add(&p->out, p->gap.p, p->gap.n);
                    p->gap.n = 0;
                }
                return st != WK_OK ? st : buf_add(&p->gap, &c, 1);
            }
            /* TAG without a closing marker: calls may follow one tag one after another ("CALL {a}{b}") */
            const bool more = p->fmt == WK_TOOLCALL_TAG && p->after_call && !p->tclose[0];
            if ((p->bare && (c == '{' || (c == '[' && p->fmt == WK_TOOLCALL_JSON))) || (more && (c == '{' || c == '['))) {
                start_block(p, B_JSON, NULL);
                return buf_add(&p->blk, &c, 1);
            }
        }
        if (!p->first[(unsigned char)c]) {
            if (p->at_gap) st = end_gap(p);
            return st != WK_OK ? st : buf_add(&p->out, &c, 1);
        }
    }
    p->hold[p->n_hold++] = c;
    for (;;) {
        int which = 0, m = match_open(p, p->hold, p->n_hold, &which);
        if (m == 1) {
            open_block(p, which);
            st = buf_add(&p->blk, p->hold, p->n_hold);
            p->n_hold = 0;
            return st;
        }
        if (m == 0) return WK_OK;
        /* not a marker: its first byte is content; the rest may still start one */
        if (p->at_gap) st = end_gap(p);
        if (st == WK_OK) st = buf_add(&p->out, p->hold, 1);
        if (st != WK_OK) return st;
        memmove(p->hold, p->hold + 1, --p->n_hold);
        if (!p->n_hold) return WK_OK;
    }
}

/* One byte inside a block. *again: the block was given up before c, and c
 * must be read again as text. */
static enum wk_status block_byte(struct wk_toolcall_parser *p, char c, bool *again,
                                 const struct wk_toolcall_sink *sink)
{
    *again = false;
    if (p->blk.n >= WK_TOOLCALL_MAX_BLOCK) {
        p->flags |= WK_TOOLCALL_F_TOO_LARGE;
        *again = true;
        return hand_back(p);
    }
    enum wk_status st = buf_add(&p->blk, &c, 1);
    if (st != WK_OK) return st;
    switch (p->bstate) {
    case B_TAG: {
        /* a JSON body (HERMES, TAG): the closing marker counts outside its strings only (code in an argument
         * may hold "</tool_call>"); quotes count once the value has begun */
        if (p->fmt == WK_TOOLCALL_HERMES || p->fmt == WK_TOOLCALL_TAG) {
            if (p->in_str) {
                if (p->esc) p->esc = false;
                else if (c == '\\') p->esc = true;
                else if (c == '"') p->in_str = false;
                return WK_OK;
            }
            if (c == '{' || c == '[') p->depth = 1;
            else if (c == '"' && p->depth) p->in_str = true;
        }
        size_t l = strlen(p->bclose);
        if (p->blk.n >= l && memcmp(p->blk.p + p->blk.n - l, p->bclose, l) == 0)
            return settle_block(p, sink);
        return WK_OK;
    }
    case B_HEAD:
        if (!p->head && is_ws(c)) return WK_OK;
        if (!p->head && (c == '[' || c == '{')) {
            start_block(p, B_JSON, NULL);
            return WK_OK;
        }
        if (++p->head > MAX_HEAD) break;
        if (p->blk.n >= 6 && memcmp(p->blk.p + p->blk.n - 6, "[ARGS]", 6) == 0) p->bstate = B_WAIT;
        return WK_OK;
    case B_WAIT:
        if (is_ws(c)) return WK_OK;
        if (c != '{' && c != '[') break;
        start_block(p, B_JSON, NULL);
        return WK_OK;
    case B_JSON:
        if (p->in_str) {
            if (p->esc)
                p->esc = false;
            else if (c == '\\')
                p->esc = true;
            else if (c == '"')
                p->in_str = false;
        } else if (c == '"') {
            p->in_str = true;
        } else if (c == '{' || c == '[') {
            p->depth++;
        } else if ((c == '}' || c == ']') && --p->depth == 0) {
            return settle_block(p, sink);
        }
        return WK_OK;
    }
    /* given up: the block before c is content, and c is read again */
    p->blk.n--;
    *again = true;
    return hand_back(p);
}

static enum wk_status fail(struct wk_toolcall_parser *p, enum wk_status st)
{
    p->failed = st;
    return st;
}

enum wk_status wk_toolcall_parser_push(struct wk_toolcall_parser *p, const char *text, size_t len,
                                       const struct wk_toolcall_sink *sink)
{
    if (p->failed) return p->failed;
    enum wk_status st = WK_OK;
    for (size_t i = 0; i < len && st == WK_OK;) {
        if (!p->in_block && !p->at_gap && !p->n_hold) { /* plain content: in one run */
            size_t j = i;
            while (j < len && !p->first[(unsigned char)text[j]])
                j++;
            if (j > i) {
                st = buf_add(&p->out, text + i, j - i);
                i = j;
                continue;
            }
        }
        bool again = false;
        st = p->in_block ? block_byte(p, text[i], &again, sink) : text_byte(p, text[i]);
        if (!again) i++;
    }
    if (st == WK_OK) st = flush_out(p, sink);
    return st != WK_OK ? fail(p, st) : WK_OK;
}

enum wk_status wk_toolcall_parser_finish(struct wk_toolcall_parser *p,
                                         const struct wk_toolcall_sink *sink)
{
    if (p->failed) return p->failed;
    enum wk_status st = WK_OK;
    if (p->in_block) {
        p->flags |= WK_TOOLCALL_F_UNTERMINATED;
        st = settle_block(p, sink);
    } else if (p->n_hold) {
        st = end_gap(p);
        if (st == WK_OK) st = buf_add(&p->out, p->hold, p->n_hold);
        p->n_hold = 0;
    }
    if (st == WK_OK && p->at_gap && p->gap.n) {
        if (p->after_call)
            p->gap.n = 0; /* whitespace after the last call */
        else
            st = end_gap(p);
    }
    if (st == WK_OK) st = flush_out(p, sink);
    return st != WK_OK ? fail(p, st) : WK_OK;
}

/* ------------------------------------------------------- all at once */

struct collect {
    struct tc_buf content;
    json_t *calls;
    bool nomem;
};

static bool collect_content(void *user, const char *text, size_t len)
{
    struct collect *c = user;
    c->nomem = buf_add(&c->content, text, len) != WK_OK;
    return !c->nomem;
}

static bool collect_call(void *user, const struct wk_toolcall *call)
{
    struct collect *c = user;
    json_t *o = json_pack("{s:s, s:O}", "name", call->name, "arguments", call->arguments);
    if (o && call->id && json_object_set_new(o, "id", json_string(call->id))) {
        json_decref(o);
        o = NULL;
    }
    c->nomem = !o || json_array_append_new(c->calls, o);
    return !c->nomem;
}

enum wk_status wk_toolcall_parse_text(enum wk_toolcall_format fmt, const char *text, size_t len,
                                      json_t *tools, char **content, size_t *content_len,
                                      json_t **calls, unsigned *flags, struct wk_error *err)
{
    *content = NULL, *calls = NULL;
    if (content_len) *content_len = 0;
    if (flags) *flags = 0;
    struct wk_toolcall_parser *p;
    enum wk_status st = wk_toolcall_parser_create(fmt, &p, err);
    if (st != WK_OK) return st;
    wk_toolcall_parser_set_tools(p, tools);
    struct collect c = {.calls = json_array()};
    struct wk_toolcall_sink sink = {collect_content, collect_call, &c};
    st = c.calls ? WK_OK : WK_E_NOMEM;
    if (st == WK_OK) st = wk_toolcall_parser_push(p, text, len, &sink);
    if (st == WK_OK) st = wk_toolcall_parser_finish(p, &sink);
    if (st == WK_OK) st = buf_add(&c.content, "", 1);
    if (st == WK_E_CANCELLED && c.nomem) st = WK_E_NOMEM;
    if (st == WK_OK) {
        *content = c.content.p;
        if (content_len) *content_len = c.content.n - 1;
        *calls = c.calls;
        if (flags) *flags = p->flags;
    } else {
        wk_free(c.content.p);
        json_decref(c.calls);
        wk_error_set(err, st, "tool-call parsing: %s", wk_status_str(st));
    }
    wk_toolcall_parser_free(p);
    return st;
}
