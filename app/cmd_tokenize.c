/*
 * cmd_tokenize.c - `wick tokenize MODEL TEXT` and `wick detokenize MODEL
 * ID...`: the model's tokenizer on its own, for debugging prompts.
 *
 * tokenize prints the ids on one line; --pieces prints one token a line,
 * its id and its piece as a JSON string. TEXT is user content (control
 * token text stays text) unless --special. detokenize prints the text the
 * ids stand for, control tokens included unless --skip-special.
 */
#include "cli.h"

#include "../src/tokenizer/wk_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens MODEL's GGUF and builds its tokenizer; prints the error. */
static bool open_tokenizer(const char *cmd, const char *path, struct wk_gguf **g,
                           struct wk_tokenizer **tok)
{
    struct wk_error err;
    if (wk_gguf_open(path, g, &err) || wk_tokenizer_from_gguf(*g, tok, &err)) {
        fprintf(stderr, "wick %s: %s\n", cmd, err.msg);
        wk_gguf_close(*g);
        *g = NULL;
        return false;
    }
    return true;
}

int cmd_tokenize(int argc, char **argv)
{
    bool pieces = false, special = false;
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pieces") == 0) pieces = true;
        else if (strcmp(argv[i], "--special") == 0) special = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: wick tokenize MODEL.gguf TEXT [--pieces] [--special]\n\n"
                   "Prints the token ids of TEXT. --pieces: one token a line with its piece.\n"
                   "--special: recognise control-token text (as in a chat template); by default\n"
                   "TEXT is user content and such text stays literal.\n");
            return WK_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "wick tokenize: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        } else if (n_pos < 2) pos[n_pos++] = argv[i];
        else {
            fprintf(stderr, "wick tokenize: unexpected argument '%s' (quote the text)\n", argv[i]);
            return WK_EXIT_USAGE;
        }
    }
    if (n_pos < 2) {
        fprintf(stderr, "Usage: wick tokenize MODEL.gguf TEXT [--pieces] [--special]\n");
        return WK_EXIT_USAGE;
    }
    struct wk_gguf *g = NULL;
    struct wk_tokenizer *tok = NULL;
    if (!open_tokenizer("tokenize", pos[0], &g, &tok)) return WK_EXIT_ERROR;
    struct wk_tokens ids = {0};
    int rc = WK_EXIT_OK;
    if (wk_tokenizer_encode(tok, pos[1], strlen(pos[1]), special, &ids)) {
        fprintf(stderr, "wick tokenize: out of memory\n");
        rc = WK_EXIT_ERROR;
    } else if (pieces) {
        for (int64_t i = 0; i < ids.n; i++) {
            size_t n;
            const char *p = wk_tokenizer_piece(tok, ids.ids[i], &n);
            printf("%d\t", ids.ids[i]);
            cli_print_json_string(stdout, p, n);
            putchar('\n');
        }
    } else {
        for (int64_t i = 0; i < ids.n; i++) printf("%s%d", i ? " " : "", ids.ids[i]);
        putchar('\n');
    }
    wk_tokens_deinit(&ids);
    wk_tokenizer_destroy(tok);
    wk_gguf_close(g);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    bool skip_special = false;
    const char *model = NULL;
    int first_id = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skip-special") == 0) skip_special = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: wick detokenize MODEL.gguf ID... [--skip-special]\n\n"
                   "Prints the text the token ids stand for; control tokens appear as their\n"
                   "text unless --skip-special.\n");
            return WK_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "wick detokenize: unknown option '%s'\n", argv[i]);
            return WK_EXIT_USAGE;
        } else if (!model) model = argv[i];
        else if (!first_id) first_id = i;
    }
    if (!model || !first_id) {
        fprintf(stderr, "Usage: wick detokenize MODEL.gguf ID... [--skip-special]\n");
        return WK_EXIT_USAGE;
    }
    struct wk_gguf *g = NULL;
    struct wk_tokenizer *tok = NULL;
    if (!open_tokenizer("detokenize", model, &g, &tok)) return WK_EXIT_ERROR;
    int rc = WK_EXIT_OK;
    int32_t n_vocab = wk_tokenizer_n_vocab(tok);
    /* check every id first, so nothing is printed for a bad list */
    for (int i = first_id; i < argc; i++) {
        if (strcmp(argv[i], "--skip-special") == 0) continue;
        int64_t id;
        if (!cli_parse_i64("detokenize", "token id", argv[i], 0, n_vocab - 1, &id)) {
            rc = WK_EXIT_USAGE;
            goto out;
        }
    }
    struct wk_detok d;
    wk_detok_init(&d);
    for (int i = first_id; i < argc; i++) {
        if (strcmp(argv[i], "--skip-special") == 0) continue;
        size_t n;
        const char *s = wk_detok_push(&d, tok, (int32_t)strtol(argv[i], NULL, 10), !skip_special, &n);
        if (s) fwrite(s, 1, n, stdout);
    }
    size_t n;
    const char *s = wk_detok_flush(&d, &n);
    fwrite(s, 1, n, stdout);
    putchar('\n');
    wk_detok_deinit(&d);
out:
    wk_tokenizer_destroy(tok);
    wk_gguf_close(g);
    return rc;
}
