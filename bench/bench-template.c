/*
 * bench-template.c - how long rendering a chat prompt takes: a 20-message
 * conversation (system, then user and assistant turns of a few sentences)
 * through a model's own chat template with the Jinja engine, exactly as a
 * chat request renders it (wk_chat_render: parse, render with provenance
 * runs, segments), and through an Ollama-style Go TEMPLATE
 * (wk_chat_render_go). Median and best of N renders, one thread, in
 * microseconds; the template parse alone too. bench/template-jinja2 times
 * Python's jinja2 on the same template and conversation.
 *
 * Usage: bench-template MODEL.gguf [N]
 */
#include "../src/model/wk_model.h"
#include "../src/runtime/wk_gotmpl.h"
#include "../src/runtime/wk_jinja.h"
#include "../src/runtime/wk_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_MSG 20

static const char GO_CHATML[] = "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
                                "<|im_start|>assistant\n";

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Prints the median and best of t[n] (ns) in microseconds. */
static void report(const char *what, int64_t *t, int n, size_t bytes)
{
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    printf("%-58s median %8.1f us  best %8.1f us  (%zu bytes out)\n", what, t[n / 2] / 1e3, t[0] / 1e3, bytes);
}

static size_t prompt_bytes(const struct wk_prompt *p)
{
    size_t n = 0;
    for (int32_t i = 0; i < p->n; i++) n += p->segs[i].len;
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [N]\n", argv[0]);
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    if (n < 1) n = 1;
    struct wk_model *m = NULL;
    struct wk_tokenizer *tok = NULL;
    struct wk_error err;
    if (wk_model_load_ex(argv[1], false, &m, &err) || wk_tokenizer_for_model(m, &tok, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct wk_chat_message msgs[N_MSG];
    char text[N_MSG][400];
    json_t *jm = json_array();
    for (int i = 0; i < N_MSG; i++) {
        const char *role = i == 0 ? "system" : i % 2 ? "user" : "assistant";
        snprintf(text[i], sizeof text[i],
                 "Message %d. Why is the sky blue? Sunlight scatters off the molecules of the air, and blue light, "
                 "with its shorter wavelength, scatters more than red (Rayleigh scattering): café, naïve, 東京.",
                 i);
        msgs[i] = (struct wk_chat_message){role, text[i]};
        json_array_append_new(jm, json_pack("{s:s, s:s}", "role", role, "content", text[i]));
    }
    int64_t *t = malloc((size_t)n * sizeof *t);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        struct wk_prompt p = {0};
        int64_t t0 = wk_time_ns();
        enum wk_status st = wk_chat_render(m, tok, msgs, N_MSG, true, &p, &err);
        t[i] = wk_time_ns() - t0;
        if (st) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        bytes = prompt_bytes(&p);
        wk_prompt_deinit(&p);
    }
    report("the model's chat template (wk_chat_render: parse + render)", t, n, bytes);
    size_t tlen;
    const char *tpl = wk_model_chat_template(m, &tlen);
    for (int i = 0; tpl && i < n; i++) {
        struct wk_jinja *j = NULL;
        int64_t t0 = wk_time_ns();
        wk_jinja_parse(tpl, tlen, &j, &err);
        t[i] = wk_time_ns() - t0;
        wk_jinja_free(j);
    }
    if (tpl) report("  of which the Jinja parse", t, n, 0);
    struct wk_gotmpl *g = NULL;
    if (wk_gotmpl_parse(GO_CHATML, sizeof GO_CHATML - 1, &g, &err)) return 1;
    for (int i = 0; i < n; i++) {
        struct wk_prompt p = {0};
        int64_t t0 = wk_time_ns();
        enum wk_status st = wk_chat_render_go(tok, g, jm, NULL, &p, &err);
        t[i] = wk_time_ns() - t0;
        if (st) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        bytes = prompt_bytes(&p);
        wk_prompt_deinit(&p);
    }
    report("a Go TEMPLATE, ChatML over .Messages (wk_chat_render_go)", t, n, bytes);
    wk_gotmpl_free(g);
    json_decref(jm);
    free(t);
    wk_tokenizer_destroy(tok);
    wk_model_destroy(m);
    return 0;
}
