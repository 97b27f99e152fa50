/*
 * harmony.c - the harmony output parser and gpt-oss's think levels
 * (wk_harmony.h says what goes where and why).
 *
 * State: in a header (its bytes kept until "<|message|>"), in a body
 * (streamed to its destination, with the first bytes of a possible closing
 * marker held in hold), or plain (no harmony framing: all content). Every
 * marker starts with '<' and holds no other '<', so when the held bytes
 * stop matching, the only place a new match can start is the byte that
 * broke it, when that byte is '<'.
 */
#include "wk_harmony.h"

#include <string.h>

enum state { IN_HEADER, IN_BODY, PLAIN };
enum dest { TO_CONTENT, TO_THINKING, TO_CALL };

static const char *const g_close[] = {"<|end|>", "<|return|>", "<|call|>", "<|start|>"};
#define N_CLOSE 4
#define MAX_MARKER 10 /* "<|return|>" */

struct wk_harmony_parser {
    enum state state;
    char header[WK_HARMONY_MAX_HEADER + 1];
    size_t n_header;
    enum dest dest;
    char name[WK_HARMONY_MAX_HEADER + 1]; /* the call's name (TO_CALL) */
    char hold[MAX_MARKER];
    size_t n_hold;
    char *body; /* a call's body so far */
    size_t n_body, cap_body;
    bool too_large;
    int n_calls;
    unsigned flags;
};

enum wk_status wk_harmony_parser_create(struct wk_harmony_parser **out, struct wk_error *err)
{
    *out = wk_calloc(1, sizeof **out);
    return *out ? WK_OK : wk_error_set(err, WK_E_NOMEM, "out of memory");
}

void wk_harmony_parser_free(struct wk_harmony_parser *p)
{
    if (!p) return;
    wk_free(p->body);
    wk_free(p);
}

unsigned wk_harmony_parser_flags(const struct wk_harmony_parser *p) { return p->flags; }

static enum wk_status emit(const struct wk_harmony_sink *s, bool thinking, const char *text, size_t n)
{
    bool (*fn)(void *, const char *, size_t) = thinking ? s->thinking : s->content;
    if (n == 0 || !fn) return WK_OK;
    return fn(s->user, text, n) ? WK_OK : WK_E_CANCELLED;
}

/* Body text to the message's destination. */
static enum wk_status body_text(struct wk_harmony_parser *p, const struct wk_harmony_sink *s, const char *text,
                                size_t n)
{
    if (p->dest != TO_CALL || n == 0) return emit(s, p->dest == TO_THINKING, text, n);
    if (p->too_large) return emit(s, false, text, n);
    if (p->n_body + n > WK_TOOLCALL_MAX_BLOCK) { /* content from here on, the body so far first */
        p->too_large = true;
        p->flags |= WK_TOOLCALL_F_MALFORMED | WK_TOOLCALL_F_TOO_LARGE;
        enum wk_status st = emit(s, false, p->body, p->n_body);
        p->n_body = 0;
        return st ? st : emit(s, false, text, n);
    }
    if (p->n_body + n > p->cap_body) {
        size_t cap = WK_MAX(p->cap_body * 2, p->n_body + n);
        char *b = wk_realloc(p->body, cap);
        if (!b) return WK_E_NOMEM;
        p->body = b, p->cap_body = cap;
    }
    memcpy(p->body + p->n_body, text, n);
    p->n_body += n;
    return WK_OK;
}

/* The end of a message: a call's body becomes the call (or content). */
static enum wk_status close_message(struct wk_harmony_parser *p, const struct wk_harmony_sink *s)
{
    enum wk_status st = WK_OK;
    if (p->dest == TO_CALL && !p->too_large) {
        json_t *args = json_loadb(p->body ? p->body : "", p->n_body, JSON_DECODE_ANY, NULL);
        if (!json_is_object(args)) { /* not a call after all: the text as it was */
            p->flags |= WK_TOOLCALL_F_MALFORMED;
            st = emit(s, false, p->body, p->n_body);
        } else if (s->call) {
            const struct wk_toolcall c = {.name = p->name, .arguments = args, .index = p->n_calls,
                                          .block = p->n_calls, .raw = p->body, .raw_len = p->n_body};
            st = s->call(s->user, &c) ? WK_OK : WK_E_CANCELLED;
        }
        if (json_is_object(args)) p->n_calls++;
        json_decref(args);
    }
    p->n_body = 0;
    p->too_large = false;
    p->dest = TO_CONTENT;
    p->state = IN_HEADER;
    p->n_header = 0;
    return st;
}

/* The word of h starting at s (up to a space, '<' or the end) into out [cap]. */
static void word(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    while (s[n] && s[n] != ' ' && s[n] != '<' && s[n] != '\n' && n + 1 < cap) n++;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* Reads the complete header in p->header (without "<|message|>"): its
 * channel and recipient set the body's destination. */
static void read_header(struct wk_harmony_parser *p)
{
    char channel[WK_HARMONY_MAX_HEADER + 1] = "", to[WK_HARMONY_MAX_HEADER + 1] = "";
    const char *h = p->header, *c = strstr(h, "<|channel|>");
    if (c) word(c + 11, channel, sizeof channel);
    for (const char *t = strstr(h, "to="); t; t = strstr(t + 3, "to="))
        if (t == h || t[-1] == ' ' || t[-1] == '>') {
            word(t + 3, to, sizeof to);
            break;
        }
    if (to[0]) {
        p->dest = TO_CALL;
        snprintf(p->name, sizeof p->name, "%s", strncmp(to, "functions.", 10) == 0 && to[10] ? to + 10 : to);
    } else {
        p->dest = strcmp(channel, "analysis") == 0 ? TO_THINKING : TO_CONTENT;
    }
}

/* Header bytes from text[*i..len): until "<|message|>" completes it (then
 * the body starts), or past the limit (then it was no header: plain). */
static enum wk_status header_bytes(struct wk_harmony_parser *p, const struct wk_harmony_sink *s, const char *text,
                                   size_t len, size_t *i)
{
    static const char msg[] = "<|message|>";
    while (*i < len) {
        if (p->n_header == WK_HARMONY_MAX_HEADER) {
            p->state = PLAIN;
            return emit(s, false, p->header, p->n_header);
        }
        p->header[p->n_header++] = text[(*i)++];
        p->header[p->n_header] = '\0';
        if (p->n_header >= 11 && memcmp(p->header + p->n_header - 11, msg, 11) == 0) {
            p->header[p->n_header -= 11] = '\0';
            read_header(p);
            p->state = IN_BODY;
            return WK_OK;
        }
    }
    return WK_OK;
}

/* How hold [n] stands against the closing markers: the index of the one it
 * equals, -1 while it is the start of one, -2 when it is neither. */
static int match_close(const char *hold, size_t n)
{
    bool prefix = false;
    for (int k = 0; k < N_CLOSE; k++) {
        size_t m = strlen(g_close[k]);
        if (n <= m && memcmp(hold, g_close[k], n) == 0) {
            if (n == m) return k;
            prefix = true;
        }
    }
    return prefix ? -1 : -2;
}

/* Body bytes from text[*i..len), up to and through a closing marker. */
static enum wk_status body_bytes(struct wk_harmony_parser *p, const struct wk_harmony_sink *s, const char *text,
                                 size_t len, size_t *i)
{
    size_t run = *i;
    enum wk_status st;
    for (; *i < len; (*i)++) {
        char c = text[*i];
        if (p->n_hold == 0 && c != '<') continue;
        if (p->n_hold == 0 && (st = body_text(p, s, text + run, *i - run))) return st;
        run = *i + 1;
        p->hold[p->n_hold++] = c;
        int k = match_close(p->hold, p->n_hold);
        if (k >= 0) { /* the message ends; <|start|> also opens the next header */
            p->n_hold = 0;
            (*i)++;
            return close_message(p, s);
        }
        if (k == -2) {
            bool restart = c == '<' && p->n_hold > 1;
            if ((st = body_text(p, s, p->hold, p->n_hold - restart))) return st;
            p->n_hold = restart;
            if (restart) p->hold[0] = '<';
        }
    }
    return body_text(p, s, text + run, *i - run);
}

enum wk_status wk_harmony_parser_push(struct wk_harmony_parser *p, const char *text, size_t len,
                                      const struct wk_harmony_sink *sink)
{
    size_t i = 0;
    enum wk_status st = WK_OK;
    while (!st && i < len) {
        if (p->state == PLAIN) {
            st = emit(sink, false, text + i, len - i);
            i = len;
        } else if (p->state == IN_HEADER) {
            st = header_bytes(p, sink, text, len, &i);
        } else {
            st = body_bytes(p, sink, text, len, &i);
        }
    }
    return st;
}

enum wk_status wk_harmony_parser_finish(struct wk_harmony_parser *p, const struct wk_harmony_sink *sink)
{
    enum wk_status st = WK_OK;
    if (p->state == IN_BODY) {
        st = body_text(p, sink, p->hold, p->n_hold);
        p->n_hold = 0;
        if (!st) st = close_message(p, sink);
    } else if (p->state == IN_HEADER) {
        /* "<|start|>" alone (a message closed by <|end|> then nothing) is framing, not text */
        const char *h = p->header;
        size_t n = p->n_header;
        while (n >= 9 && memcmp(h, "<|start|>", 9) == 0) h += 9, n -= 9;
        if (n && strcmp(h, "assistant") != 0) st = emit(sink, false, h, n);
        p->n_header = 0;
    }
    return st;
}

enum wk_status wk_harmony_reasoning_effort(const json_t *think, const char **effort, struct wk_error *err)
{
    static const char *const levels[] = {"low", "medium", "high"};
    *effort = NULL;
    if (!think || json_is_null(think) || json_is_false(think)) return WK_OK;
    if (json_is_true(think)) {
        *effort = "medium";
        return WK_OK;
    }
    const char *s = json_string_value(think);
    for (size_t i = 0; s && i < WK_ARRAY_LEN(levels); i++)
        if (strcmp(s, levels[i]) == 0) {
            *effort = levels[i];
            return WK_OK;
        }
    char shown[40] = "(not a string or boolean)";
    if (s) wk_str_printable(s, strlen(s), shown, sizeof shown);
    return wk_error_set(err, WK_E_INVALID, "think %s: gpt-oss takes true, false, \"low\", \"medium\" or \"high\"",
                        shown);
}
