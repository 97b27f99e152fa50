/*
 * fuzz-api.c - libFuzzer target for the server's request handling that
 * needs no model: the first byte picks what the rest is, then
 *   0-3: a request body for /api/generate, /api/chat, /v1/chat/completions
 *        or /v1/completions, parsed as JSON and, when it is an object, read
 *        by srv_gen_parse as the server reads it (the model name, options
 *        against the options table, messages, stop strings, logprobs);
 *        the error message of a refusal must make a valid error body;
 *   4:   a Host header value, checked as for a server on loopback;
 *   5:   an Origin header value, checked against the allowed origins.
 * Any crash, sanitizer report, leak, or an error body that cannot be built
 * is a finding.
 *
 * Build and run (clang): make fuzz && build/fuzz/fuzz-api \
 *     -max_total_time=600 build/fuzz/corpus-fuzz-api tests/fuzz/corpus/api
 */
#include "../../src/server/server_internal.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct srv_access *acc;
    if (!acc) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(0x7F000001);
        setenv("OLLAMA_ORIGINS", "https://app.example.com,chrome-extension://*,*.test", 1);
        acc = srv_access_create(&a);
    }
    if (size < 1) return 0;
    const int kind = data[0] % 6;
    data++, size--;
    if (kind >= 4) {
        char *s = malloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        if (kind == 4) (void)srv_access_host_ok(acc, s);
        else (void)srv_access_origin_ok(acc, s);
        free(s);
        return 0;
    }
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    struct srv_gen *g = wk_calloc(1, sizeof *g);
    g->api = (enum srv_api)kind;
    g->call.fd = -1;
    char msg[WK_ERROR_MSG_MAX];
    msg[0] = '\0';
    int status = srv_gen_parse(g, body, msg, sizeof msg);
    if (status) {
        json_t *e = srv_error_body(g->api, status, msg);
        if (!e) __builtin_trap(); /* an error that cannot be told */
        json_decref(e);
    }
    json_decref(g->runner_req);
    json_decref(g->lps);
    wk_free(g->out.p);
    wk_free(g->text.p);
    wk_free(g);
    json_decref(body);
    return 0;
}
