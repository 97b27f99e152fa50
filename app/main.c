/*
 * main.c - the wick command: dispatches to a subcommand.
 */
#include "cli.h"

#include "../src/server/wk_server.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "wick %s - run large language models locally\n\n"
               "Usage:\n"
               "  wick run MODEL.gguf [PROMPT]   answer PROMPT (or stdin), or chat interactively\n"
               "  wick tokenize MODEL.gguf TEXT  print TEXT's token ids (--pieces: with pieces)\n"
               "  wick detokenize MODEL.gguf ID... print the text of token ids\n"
               "  wick template MODEL --messages F.json  a conversation through the model's chat template\n"
               "  wick bench MODEL.gguf          prompt and generation speed (tokens/s)\n"
               "  wick create NAME -f Modelfile  add a model to the store (WICK_MODELS)\n"
               "  wick list                      the stored models\n"
               "  wick show NAME [--modelfile]   a stored model's details\n"
               "  wick rm NAME... / cp SRC DST   remove or copy stored models\n"
               "  wick pull NAME [--insecure]    download a model from a registry into the store\n"
               "  wick push NAME [--insecure]    upload a stored model to a registry\n"
               "  wick serve                     the Ollama and OpenAI APIs over HTTP (WICK_HOST)\n"
               "  wick ps                        the models a running server has loaded\n"
               "  wick stop MODEL                unload a model from a running server\n"
               "  wick --version                 print the version\n"
               "  wick help                      this text\n\n"
               "Run 'wick run --help' or 'wick bench --help' for their options.\n",
            WK_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return WK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0) return cmd_tokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "detokenize") == 0) return cmd_detokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0) return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "runner") == 0) return cmd_runner(argc - 1, argv + 1);
    if (strcmp(cmd, "ps") == 0) return cmd_ps(argc - 1, argv + 1);
    if (strcmp(cmd, "stop") == 0) return cmd_stop(argc - 1, argv + 1);
    if (strcmp(cmd, "create") == 0) return cmd_create(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0 || strcmp(cmd, "ls") == 0) return cmd_list(argc - 1, argv + 1);
    if (strcmp(cmd, "show") == 0) return cmd_show(argc - 1, argv + 1);
    if (strcmp(cmd, "rm") == 0) return cmd_rm(argc - 1, argv + 1);
    if (strcmp(cmd, "cp") == 0) return cmd_cp(argc - 1, argv + 1);
    if (strcmp(cmd, "pull") == 0) return cmd_pull(argc - 1, argv + 1);
    if (strcmp(cmd, "push") == 0) return cmd_push(argc - 1, argv + 1);
    if (strcmp(cmd, "template") == 0) return cmd_template(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-v") == 0 || strcmp(cmd, "version") == 0) {
        printf("wick version %s (Ollama API %s)\n", WK_VERSION, WK_OLLAMA_API_VERSION);
        return WK_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return WK_EXIT_OK;
    }
    fprintf(stderr, "wick: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return WK_EXIT_USAGE;
}
