/*
 * access.c - who may talk to `wick serve`, as Ollama decides it
 * (server/routes.go's allowedHostsMiddleware and its CORS setup from
 * envconfig's OLLAMA_ORIGINS; read to learn the rules, written anew):
 *
 * - Host: while the server listens on a loopback address, a request whose
 *   Host header names anything but this machine is refused (403). That is
 *   what stops DNS rebinding: a web page of evil.example whose name later
 *   resolves to 127.0.0.1 still sends "Host: evil.example". Allowed: no
 *   Host, "localhost", this machine's hostname, names under .localhost,
 *   .local and .internal, and IP literals that are loopback, private,
 *   unspecified or an address of one of this machine's interfaces. On any
 *   other listening address every Host is accepted (the operator chose to
 *   serve a network).
 * - Origin: a request that carries an Origin header (a browser's
 *   cross-origin call) is refused (403) unless the origin matches the
 *   allowed list: http and https on localhost, 127.0.0.1 and 0.0.0.0 with
 *   or without a port, app://, file://, tauri://, vscode-webview:// and
 *   vscode-file:// anything, plus the comma-separated patterns of
 *   OLLAMA_ORIGINS and WICK_ORIGINS (a "*" matches any run of characters;
 *   "*" alone allows every origin). Allowed origins get CORS headers, and
 *   a preflight (OPTIONS) is answered 204.
 */
#include "server_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_ORIGINS 256

struct srv_access {
    bool loopback;               /* listening on a loopback address */
    char hostname[256];          /* this machine's, lower case */
    char *origins[MAX_ORIGINS];  /* allowed origin patterns: the defaults first */
    int n_origins;
};

/* Adds one pattern (trimmed of spaces and quotes); false when the list is full. */
static bool add_origin(struct srv_access *a, const char *p, size_t n)
{
    while (n && isspace((unsigned char)*p)) p++, n--;
    while (n && isspace((unsigned char)p[n - 1])) n--;
    if (n && (p[0] == '"' || p[0] == '\'')) p++, n--;
    if (n && (p[n - 1] == '"' || p[n - 1] == '\'')) n--;
    if (!n) return true;
    if (a->n_origins == MAX_ORIGINS) return false;
    if (!(a->origins[a->n_origins] = wk_strndup(p, n))) return false;
    a->n_origins++;
    return true;
}

static void add_origins_env(struct srv_access *a, const char *name)
{
    const char *v = getenv(name);
    int dropped = 0;
    while (v && *v) {
        const char *comma = strchr(v, ',');
        size_t n = comma ? (size_t)(comma - v) : strlen(v);
        if (!add_origin(a, v, n)) dropped++;
        v = comma ? comma + 1 : NULL;
    }
    if (dropped)
        fprintf(stderr, "wick: warning: %s: %d origin pattern%s past the first %d allowed ones ignored\n", name,
                dropped, dropped == 1 ? "" : "s", MAX_ORIGINS);
}

struct srv_access *srv_access_create(const struct sockaddr *listen)
{
    struct srv_access *a = wk_calloc(1, sizeof *a);
    if (!a) return NULL;
    a->loopback = listen->sa_family == AF_INET6
                      ? IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)listen)->sin6_addr)
                      : (ntohl(((const struct sockaddr_in *)listen)->sin_addr.s_addr) >> 24) == 127;
    if (gethostname(a->hostname, sizeof a->hostname - 1) != 0) a->hostname[0] = '\0';
    for (char *p = a->hostname; *p; p++) *p = (char)tolower((unsigned char)*p);
    static const char *const hosts[] = {"localhost", "127.0.0.1", "0.0.0.0"};
    for (size_t i = 0; i < WK_ARRAY_LEN(hosts); i++) {
        char b[64];
        static const char *const forms[] = {"http://%s", "https://%s", "http://%s:*", "https://%s:*"};
        for (size_t f = 0; f < WK_ARRAY_LEN(forms); f++) {
            snprintf(b, sizeof b, forms[f], hosts[i]);
            add_origin(a, b, strlen(b));
        }
    }
    static const char *const apps[] = {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"};
    for (size_t i = 0; i < WK_ARRAY_LEN(apps); i++) add_origin(a, apps[i], strlen(apps[i]));
    add_origins_env(a, "OLLAMA_ORIGINS");
    add_origins_env(a, "WICK_ORIGINS");
    return a;
}

void srv_access_destroy(struct srv_access *a)
{
    if (!a) return;
    for (int i = 0; i < a->n_origins; i++) wk_free(a->origins[i]);
    wk_free(a);
}

/* pattern (any number of "*", each any run of characters) against s,
 * case-insensitively, in O(|pat| * |s|) at worst: on a mismatch only the
 * last star's run grows (an earlier star's choice never needs revisiting,
 * as the text between stars matched anywhere later matches as well). */
static bool glob_match(const char *pat, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*pat == '*') {
            star = ++pat;
            resume = s;
        } else if (*pat && tolower((unsigned char)*pat) == tolower((unsigned char)*s)) {
            pat++, s++;
        } else if (star) {
            pat = star;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*pat == '*') pat++;
    return !*pat;
}

bool srv_access_origin_ok(const struct srv_access *a, const char *origin)
{
    if (strlen(origin) > 1024) return false;
    for (int i = 0; i < a->n_origins; i++)
        if (glob_match(a->origins[i], origin)) return true;
    return false;
}

/* An address of one of this machine's interfaces. */
static bool local_ip(int family, const void *addr)
{
    struct ifaddrs *list, *a;
    if (getifaddrs(&list) != 0) return false;
    bool found = false;
    for (a = list; a && !found; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != family) continue;
        if (family == AF_INET)
            found = memcmp(&((const struct sockaddr_in *)a->ifa_addr)->sin_addr, addr, 4) == 0;
        else
            found = memcmp(&((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, addr, 16) == 0;
    }
    freeifaddrs(list);
    return found;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

static bool all_digits(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

static bool v4_ok(const struct in_addr *a4)
{
    uint32_t v = ntohl(a4->s_addr);
    return (v >> 24) == 127 || (v >> 24) == 10 || (v >> 20) == (172u << 4 | 1) || (v >> 16) == (192u << 8 | 168) ||
           v == 0 || local_ip(AF_INET, a4);
}

/* The Host header (host, host:port, [v6] or [v6]:port; a port is digits)
 * allowed for a server on a loopback address: see the top of this file.
 * A fully qualified name's final dot ("localhost.") is the same name; an
 * IPv4-mapped IPv6 address is judged as its IPv4 address. */
bool srv_access_host_ok(const struct srv_access *a, const char *header)
{
    char host[256];
    size_t n = strlen(header);
    if (n >= sizeof host) return false;
    if (header[0] == '[') { /* [v6] or [v6]:port, nothing else after the bracket */
        const char *close = strchr(header, ']');
        if (!close || (close[1] && (close[1] != ':' || !all_digits(close + 2)))) return false;
        snprintf(host, sizeof host, "%.*s", (int)(close - header - 1), header + 1);
    } else {
        snprintf(host, sizeof host, "%s", header);
        char *colon = strchr(host, ':');
        if (colon && !strchr(colon + 1, ':')) { /* host:port, not a bare v6 address */
            if (!all_digits(colon + 1)) return false;
            *colon = '\0';
        }
    }
    size_t len = strlen(host);
    if (len > 1 && host[len - 1] == '.' && host[len - 2] != '.') host[--len] = '\0';
    if (!*host || strcasecmp(host, "localhost") == 0 || (a->hostname[0] && strcasecmp(host, a->hostname) == 0))
        return true;
    if (ends_with(host, ".localhost") || ends_with(host, ".local") || ends_with(host, ".internal")) return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) return v4_ok(&a4);
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        if (IN6_IS_ADDR_V4MAPPED(&a6)) {
            memcpy(&a4, a6.s6_addr + 12, 4);
            return v4_ok(&a4);
        }
        return IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6) || (a6.s6_addr[0] & 0xFE) == 0xFC ||
               local_ip(AF_INET6, &a6);
    }
    return false;
}

/* MHD iterator: counts the Host headers. */
static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind, (void)value;
    if (key && strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) ++*(int *)cls;
    return MHD_YES;
}

const char *srv_access_check(const struct srv_access *a, struct MHD_Connection *c, char *msg, size_t cap)
{
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    int n_host = 0;
    if (a->loopback && host) MHD_get_connection_values(c, MHD_HEADER_KIND, count_host, &n_host);
    if (n_host > 1) { /* refused (RFC 9112 3.2 forbids it): a proxy in front might have read the other one */
        snprintf(msg, cap, "more than one Host header: this server answers requests for this machine only");
        return msg;
    }
    if (a->loopback && host && !srv_access_host_ok(a, host)) {
        char h[80];
        wk_str_printable(host, strlen(host), h, sizeof h);
        snprintf(msg, cap, "Host '%s' is not allowed: this server answers requests for this machine only", h);
        return msg;
    }
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin && !srv_access_origin_ok(a, origin)) {
        char o[80];
        wk_str_printable(origin, strlen(origin), o, sizeof o);
        snprintf(msg, cap, "origin '%s' is not allowed (OLLAMA_ORIGINS or WICK_ORIGINS lists the allowed ones)", o);
        return msg;
    }
    return NULL;
}

void srv_access_headers(const struct srv_access *a, struct MHD_Connection *c, struct MHD_Response *r)
{
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin || !srv_access_origin_ok(a, origin)) return; /* a refused origin's 403 gets none */
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
}

int srv_access_preflight(const struct srv_access *a, struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) return (int)MHD_NO;
    srv_access_headers(a, c, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Stainless-Lang, "
                            "X-Stainless-Package-Version, X-Stainless-Os, X-Stainless-Arch, X-Stainless-Retry-Count, "
                            "X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Async, "
                            "X-Stainless-Helper-Method, X-Stainless-Poll-Helper, X-Stainless-Custom-Poll-Interval, "
                            "X-Stainless-Timeout, X-Stainless-Read-Timeout, X-Api-Key, Anthropic-Version, Anthropic-Beta, "
                            "Anthropic-Dangerous-Direct-Browser-Access");
    MHD_add_response_header(r, "Access-Control-Max-Age", "43200");
    enum MHD_Result ret = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    return (int)ret;
}
