/*
 * wk_json.h - JSON files read whole, then parsed (jansson).
 */
#ifndef WK_JSON_H
#define WK_JSON_H

#include <jansson.h>
#include <stddef.h>

/*
 * The JSON value in the regular file at path, as json_load_file(path,
 * flags, error) gives it (the same flags, the same values, the same error
 * texts for malformed JSON), but read with one read per chunk and parsed
 * from memory (json_loadb) rather than through stdio one character at a
 * time, which for a 7 MB tokenizer.json costs tens of milliseconds. NULL
 * on an error, with error (when not NULL) saying which: the file cannot
 * be opened or read ("unable to open PATH: REASON"), is not a regular file
 * (a FIFO would block), or is not JSON. The caller owns the value.
 */
json_t *wk_json_load_file(const char *path, size_t flags, json_error_t *error);

#endif
