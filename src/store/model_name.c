/*
 * model_name.c - model names (wk_store.h): [host[:port]/][namespace/]name[:tag]
 * parsed and formatted as Ollama's types/model names them.
 */
#include "wk_store.h"

#include <stdio.h>
#include <string.h>

static bool part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 127 || s[0] == '.' || s[0] == '-') return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

enum wk_status wk_model_name_parse(const char *s, struct wk_model_name *out, struct wk_error *err)
{
    char shown[160];
    wk_str_printable(s, strlen(s), shown, sizeof shown);
    const char *colon = strrchr(s, ':');
    const char *slash = strrchr(s, '/');
    if (colon && slash && colon < slash) colon = NULL; /* a ':' in the host part */
    size_t path_len = colon ? (size_t)(colon - s) : strlen(s);
    const char *tag = colon ? colon + 1 : "latest";
    if (!part_ok(tag, strlen(tag)))
        return wk_error_set(err, WK_E_INVALID, "invalid model name '%s': bad tag", shown);
    /* split the path part on '/': name, namespace/name or host/namespace/name */
    const char *parts[3];
    size_t lens[3];
    int n = 0;
    for (const char *p = s; p < s + path_len;) {
        const char *e = memchr(p, '/', (size_t)(s + path_len - p));
        if (!e) e = s + path_len;
        /* the host part may end in ":port" (127.0.0.1:5000/ns/name); the
         * manifest folder keeps it, as Ollama's does */
        const char *port = n == 0 ? memchr(p, ':', (size_t)(e - p)) : NULL;
        bool port_ok = port && port + 1 < e && e - (port + 1) <= 5 && e - p <= 127 &&
                       strspn(port + 1, "0123456789") >= (size_t)(e - (port + 1));
        if (n == 3 || !part_ok(p, (size_t)((port_ok ? port : e) - p)) || (port && !port_ok))
            return wk_error_set(err, WK_E_INVALID,
                                "invalid model name '%s': want [host[:port]/][namespace/]name[:tag] of "
                                "letters, digits, '.', '_', '-'",
                                shown);
        parts[n] = p, lens[n++] = (size_t)(e - p);
        p = e + (e < s + path_len);
    }
    if (n == 0 || (n < 3 && memchr(parts[0], ':', lens[0])))
        return wk_error_set(err, WK_E_INVALID, "invalid model name '%s'", shown);
    snprintf(out->host, sizeof out->host, "%s", WK_DEFAULT_HOST);
    snprintf(out->ns, sizeof out->ns, "%s", WK_DEFAULT_NAMESPACE);
    if (n == 3) snprintf(out->host, sizeof out->host, "%.*s", (int)lens[0], parts[0]);
    if (n >= 2) snprintf(out->ns, sizeof out->ns, "%.*s", (int)lens[n - 2], parts[n - 2]);
    snprintf(out->name, sizeof out->name, "%.*s", (int)lens[n - 1], parts[n - 1]);
    snprintf(out->tag, sizeof out->tag, "%s", tag);
    return WK_OK;
}

void wk_model_name_format(const struct wk_model_name *n, char *out, size_t cap)
{
    bool dh = strcmp(n->host, WK_DEFAULT_HOST) == 0, dn = strcmp(n->ns, WK_DEFAULT_NAMESPACE) == 0;
    if (dh && dn) snprintf(out, cap, "%s:%s", n->name, n->tag);
    else if (dh) snprintf(out, cap, "%s/%s:%s", n->ns, n->name, n->tag);
    else snprintf(out, cap, "%s/%s/%s:%s", n->host, n->ns, n->name, n->tag);
}

