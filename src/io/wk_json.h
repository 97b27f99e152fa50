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

/* A JSON value as text (json_dumps with JSON_ENCODE_ANY), a real in the
 * shortest form that reads back the same (wk_f64_text: 0.3, not jansson's
 * 0.29999999999999999): how a stored PARAMETER shows. malloc'd (free it);
 * NULL when out of memory. */
char *wk_json_text(const json_t *v);

#endif
