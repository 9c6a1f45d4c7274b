/* node/config.c: the configuration table and its parsers. Only this file and
 * main.c may print-and-exit; here errors are returned as one line of text. */
#include "node/config.h"

#include "node/base/glob.h"
#include "node/base/mem.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cfg_kind { K_INT, K_MEM, K_BOOL, K_STR, K_ENUM };

struct cfg_key {
    const char *name;           /* canonical name, as CONFIG GET shows it */
    const char *alias;          /* another accepted name, or NULL */
    enum cfg_kind kind;
    size_t off;
    const char *def;
    int64_t min, max;
    bool live;
    const char *const *enums;   /* K_ENUM: value names, index = stored value */
};

static const char *const dur_names[] = { "memory", "everysec", "always", NULL };
static const char *const fsync_names[] = { "no", "everysec", "always", NULL };
static const char *const log_names[] = { "debug", "verbose", "notice", "warning", NULL };

#define F(field) offsetof(struct cfg, field)
#define GB (1024ll * 1024 * 1024)
/* The only list of configuration keys. */
static const struct cfg_key cfg_keys[] = {
    { "port", NULL, K_INT, F(port), "6379", 0, 65535, false, NULL },
    { "bind", NULL, K_STR, F(bind), "*", 0, 0, false, NULL },
    { "protected-mode", NULL, K_BOOL, F(protected_mode), "yes", 0, 1, true, NULL },
    { "shards", NULL, K_INT, F(shards), "1", 1, 1024, false, NULL },
    { "shard_cpus", NULL, K_STR, F(shard_cpus), "", 0, 0, false, NULL },
    { "durability", NULL, K_ENUM, F(durability), "memory", 0, 0, false, dur_names },
    { "appendonly", NULL, K_BOOL, F(appendonly), "no", 0, 1, false, NULL },
    { "appendfsync", NULL, K_ENUM, F(appendfsync), "everysec", 0, 0, false, fsync_names },
    { "save", NULL, K_STR, F(save), "", 0, 0, true, NULL },
    { "wal_segment_bytes", NULL, K_MEM, F(wal_segment_bytes), "64mb", 4096, INT64_MAX, false, NULL },
    { "checkpoint_wal_bytes", NULL, K_MEM, F(checkpoint_wal_bytes), "256mb", 0, INT64_MAX, true, NULL },
    { "wal_sync_min_interval_us", NULL, K_INT, F(wal_sync_min_interval_us), "0", -1, 1000000, false, NULL },
    { "wal_accept_loss", NULL, K_BOOL, F(wal_accept_loss), "no", 0, 1, false, NULL },
    { "dir", "data_dir", K_STR, F(dir), "./data", 0, 0, false, NULL },
    { "requirepass", NULL, K_STR, F(requirepass), "", 0, 0, true, NULL },
    { "maxclients", NULL, K_INT, F(maxclients), "10000", 1, 1000000, true, NULL },
    { "timeout", NULL, K_INT, F(timeout), "0", 0, INT_MAX, true, NULL },
    { "tcp-keepalive", NULL, K_INT, F(tcp_keepalive), "300", 0, INT_MAX, true, NULL },
    { "tcp-backlog", NULL, K_INT, F(tcp_backlog), "511", 0, INT_MAX, false, NULL },
    { "hz", NULL, K_INT, F(hz), "10", 1, 500, true, NULL },
    { "proto-max-bulk-len", NULL, K_MEM, F(proto_max_bulk_len), "512mb", 1024 * 1024, INT64_MAX, true, NULL },
    { "client-query-buffer-limit", NULL, K_MEM, F(client_query_buffer_limit), "1gb", 1024 * 1024, INT64_MAX, true, NULL },
    { "loglevel", NULL, K_ENUM, F(loglevel), "notice", 0, 0, true, log_names },
    { "logfile", NULL, K_STR, F(logfile), "", 0, 0, false, NULL },
    { "databases", NULL, K_INT, F(databases), "1", 1, INT_MAX, false, NULL },
    { "cluster-announce-ip", NULL, K_STR, F(cluster_announce_ip), "", 0, 0, true, NULL },
    { "shutdown-timeout", NULL, K_INT, F(shutdown_timeout), "10", 0, 3600, true, NULL },
    { "active-expire-effort", NULL, K_INT, F(active_expire_effort), "1", 1, 10, true, NULL },
    { "list-max-listpack-size", "list-max-ziplist-size", K_INT, F(list_max_listpack_size), "-2", -5, INT_MAX, true, NULL },
    { "list-compress-depth", NULL, K_INT, F(list_compress_depth), "0", 0, INT_MAX, true, NULL },
    { "hash-max-listpack-entries", "hash-max-ziplist-entries", K_INT, F(hash_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "hash-max-listpack-value", "hash-max-ziplist-value", K_INT, F(hash_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "set-max-intset-entries", NULL, K_INT, F(set_max_intset_entries), "512", 0, INT_MAX, true, NULL },
    { "set-max-listpack-entries", NULL, K_INT, F(set_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "set-max-listpack-value", NULL, K_INT, F(set_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "zset-max-listpack-entries", "zset-max-ziplist-entries", K_INT, F(zset_max_listpack_entries), "128", 0, INT_MAX, true, NULL },
    { "zset-max-listpack-value", "zset-max-ziplist-value", K_INT, F(zset_max_listpack_value), "64", 0, INT_MAX, true, NULL },
    { "client-output-buffer-limit", NULL, K_STR, F(client_output_buffer_limit), "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60", 0, 0, true, NULL },
    { "maxmemory", NULL, K_MEM, F(maxmemory), "0", 0, INT64_MAX, true, NULL },
    { "maxmemory-policy", NULL, K_STR, F(maxmemory_policy), "noeviction", 0, 0, true, NULL },
};
#undef F
#define NKEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))

static char cfg_file_path[4096];

const char *
cfg_file(void)
{
    return cfg_file_path;
}

/* Case-insensitive, '-' == '_'. */
static bool
key_eq(const char *canon, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && canon[i]; i++) {
        char a = canon[i] == '_' ? '-' : canon[i];
        char b = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
        if (a != b) {
            return false;
        }
    }
    return i == n && canon[i] == '\0';
}

static const struct cfg_key *
key_find(const char *s, size_t n)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (key_eq(cfg_keys[i].name, s, n) || (cfg_keys[i].alias && key_eq(cfg_keys[i].alias, s, n))) {
            return &cfg_keys[i];
        }
    }
    return NULL;
}

bool
cfg_parse_mem(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-' || isspace((unsigned char)*s)) {
        return false;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) {
        return false;
    }
    unsigned long long mul = 1;
    if (*end) {
        static const struct { const char *u; unsigned long long m; } units[] = {
            { "b", 1 }, { "k", 1000ull }, { "kb", 1024ull }, { "m", 1000000ull },
            { "mb", 1048576ull }, { "g", 1000000000ull }, { "gb", 1073741824ull },
        };
        size_t i;
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strcasecmp(end, units[i].u) == 0) {
                mul = units[i].m;
                break;
            }
        }
        if (i == sizeof(units) / sizeof(units[0])) {
            return false;
        }
    }
    if (v > (unsigned long long)INT64_MAX / mul) {
        return false;
    }
    *out = (int64_t)(v * mul);
    return true;
}

static bool
parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s)) {
        return false;
    }
    long long v = strtoll(s, &end, 10);
    if (errno || *end) {
        return false;
    }
    *out = v;
    return true;
}

int
cfg_cpu_list(const char *s, int *cpus, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0 || a > 4095) {
            return -1;
        }
        s = end;
        b = a;
        if (*s == '-') {
            s++;
            b = strtol(s, &end, 10);
            if (end == s || b < a || b > 4095) {
                return -1;
            }
            s = end;
        }
        for (long i = a; i <= b; i++) {
            if (n == max) {
                return -1;
            }
            cpus[n++] = (int)i;
        }
        if (*s == ',' || *s == ' ') {
            s++;
        } else if (*s) {
            return -1;
        }
    }
    return n;
}

/* Validate and store one value; returns NULL or a static reason. */
static const char *
key_store(struct cfg *c, const struct cfg_key *k, const char *v)
{
    char *base = (char *)c;
    int64_t n;

    switch (k->kind) {
    case K_INT:
        if (!parse_int(v, &n)) {
            return "argument couldn't be parsed into an integer";
        }
        if (n < k->min || n > k->max) {
            return "argument must be between the allowed minimum and maximum";
        }
        *(int64_t *)(base + k->off) = n;
        return NULL;
    case K_MEM:
        if (!cfg_parse_mem(v, &n)) {
            return "argument must be a memory value";
        }
        if (n < k->min || n > k->max) {
            return "argument must be between the allowed minimum and maximum";
        }
        *(int64_t *)(base + k->off) = n;
        return NULL;
    case K_BOOL:
        if (strcasecmp(v, "yes") == 0) {
            *(bool *)(base + k->off) = true;
        } else if (strcasecmp(v, "no") == 0) {
            *(bool *)(base + k->off) = false;
        } else {
            return "argument must be 'yes' or 'no'";
        }
        return NULL;
    case K_ENUM:
        for (int i = 0; k->enums[i]; i++) {
            if (strcasecmp(v, k->enums[i]) == 0) {
                *(int64_t *)(base + k->off) = i;
                return NULL;
            }
        }
        return "argument(s) must be one of the allowed values";
    case K_STR: {
        char **slot = (char **)(base + k->off);
        rv_free(*slot);
        *slot = rv_strndup(v, strlen(v));
        return NULL;
    }
    }
    return "unsupported";
}

/* "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60": any subset of the
 * classes, in groups of four, as redis.conf writes it. */
static const char *
parse_obl(struct cfg *c)
{
    char buf[512];
    char *save = NULL, *tok[64];
    int n = 0;
    snprintf(buf, sizeof(buf), "%s", c->client_output_buffer_limit);
    for (char *t = strtok_r(buf, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save)) {
        tok[n++] = t;
    }
    if (n % 4 != 0) {
        return "expected groups of '<class> <hard limit> <soft limit> <soft seconds>'";
    }
    for (int i = 0; i < n; i += 4) {
        int cls;
        int64_t hard, soft, secs;
        if (strcasecmp(tok[i], "normal") == 0) {
            cls = CFG_OBL_NORMAL;
        } else if (strcasecmp(tok[i], "slave") == 0 || strcasecmp(tok[i], "replica") == 0) {
            cls = CFG_OBL_REPLICA;
        } else if (strcasecmp(tok[i], "pubsub") == 0) {
            cls = CFG_OBL_PUBSUB;
        } else {
            return "class must be normal, replica (slave) or pubsub";
        }
        if (!cfg_parse_mem(tok[i + 1], &hard) || !cfg_parse_mem(tok[i + 2], &soft) ||
            !parse_int(tok[i + 3], &secs) || secs < 0) {
            return "limits must be memory values and seconds a non-negative integer";
        }
        c->obl_hard[cls] = hard;
        c->obl_soft[cls] = soft;
        c->obl_secs[cls] = secs;
    }
    return NULL;
}

/* Cross-key checks that apply to a whole snapshot. */
static const char *
cfg_check(struct cfg *c, const char **key)
{
    const char *why = parse_obl(c);
    if (why) {
        *key = "client-output-buffer-limit";
        return why;
    }
    int cpus[1024];
    if (c->shard_cpus[0] && cfg_cpu_list(c->shard_cpus, cpus, 1024) < 0) {
        *key = "shard_cpus";
        return "expected a CPU list such as '0,1,2' or '0-3'";
    }
    if (c->appendonly) {
        /* Redis names: appendonly yes + appendfsync always|everysec|no ("no"
         * still writes every record; the syncer runs every second). */
        int64_t want = c->appendfsync == 2 ? CFG_DUR_ALWAYS : CFG_DUR_EVERYSEC;
        if (c->durability != CFG_DUR_MEMORY && c->durability != want) {
            *key = "appendfsync";
            return "conflicts with 'durability': set one or the other";
        }
        c->durability = want;
    }
    if (c->port + c->shards - 1 > 65535) {
        *key = "shards";
        return "port + shards - 1 exceeds 65535";
    }
    if (strcasecmp(c->maxmemory_policy, "noeviction") != 0) {
        *key = "maxmemory-policy";
        return "only 'noeviction' is available in this build";
    }
    return NULL;
}

static struct cfg *
cfg_defaults(void)
{
    struct cfg *c = rv_calloc(1, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++) {
        const char *why = key_store(c, &cfg_keys[i], cfg_keys[i].def);
        (void)why;
    }
    return c;
}

struct cfg *
cfg_dup(const struct cfg *src)
{
    struct cfg *c = rv_malloc(sizeof(*c));
    memcpy(c, src, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++) {
        if (cfg_keys[i].kind == K_STR) {
            char **slot = (char **)((char *)c + cfg_keys[i].off);
            *slot = rv_strndup(*slot, strlen(*slot));
        }
    }
    return c;
}

void
cfg_destroy(struct cfg *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < NKEYS; i++) {
        if (cfg_keys[i].kind == K_STR) {
            rv_free(*(char **)((char *)c + cfg_keys[i].off));
        }
    }
    rv_free(c);
}

/* Split a config line into words: whitespace separated, "double quotes" with
 * C escapes (\n \r \t \" \\ \xHH), 'single quotes' with \' only. Returns the
 * word count, or -1 for unbalanced quotes. Words are written into out. */
static int
split_line(const char *s, char words[][1024], int max)
{
    int n = 0;
    for (;;) {
        while (*s && isspace((unsigned char)*s)) {
            s++;
        }
        if (!*s || *s == '#') {
            return n;
        }
        if (n == max) {
            return -1;
        }
        char *w = words[n];
        size_t len = 0;
        char q = 0;
        if (*s == '"' || *s == '\'') {
            q = *s++;
        }
        while (*s && (q || !isspace((unsigned char)*s))) {
            char ch = *s++;
            if (q && ch == q) {
                q = 0;
                if (*s && !isspace((unsigned char)*s)) {
                    return -1;
                }
                break;
            }
            if (q == '"' && ch == '\\' && *s) {
                ch = *s++;
                switch (ch) {
                case 'n': ch = '\n'; break;
                case 'r': ch = '\r'; break;
                case 't': ch = '\t'; break;
                case 'x':
                    if (isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1])) {
                        char hex[3] = { s[0], s[1], 0 };
                        ch = (char)strtol(hex, NULL, 16);
                        s += 2;
                    }
                    break;
                default: break;
                }
            } else if (q == '\'' && ch == '\\' && *s == '\'') {
                ch = *s++;
            }
            if (len + 1 < 1024) {
                w[len++] = ch;
            }
        }
        if (q) {
            return -1;
        }
        w[len] = '\0';
        n++;
    }
}

/* Apply "key value..." from a source; where names the source for errors. */
static int
apply_kv(struct cfg *c, const char *key, const char *const *vals, int nvals, const char *where,
         char *err, size_t errsz)
{
    const struct cfg_key *k = key_find(key, strlen(key));
    if (k == NULL) {
        snprintf(err, errsz, "config error at %s: '%s': unknown config key", where, key);
        return -1;
    }
    char joined[4096] = "";
    size_t off = 0;
    for (int i = 0; i < nvals; i++) {
        off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s%s", i ? " " : "", vals[i]);
        if (off >= sizeof(joined)) {
            snprintf(err, errsz, "config error at %s: '%s': value too long", where, k->name);
            return -1;
        }
    }
    if (nvals == 0 && k->kind != K_STR) {
        snprintf(err, errsz, "config error at %s: '%s': missing value", where, k->name);
        return -1;
    }
    if (nvals > 1 && strcmp(k->name, "bind") != 0) {
        snprintf(err, errsz, "config error at %s: '%s': expected one value, got %d", where, k->name,
                 nvals);
        return -1;
    }
    const char *why = key_store(c, k, joined);
    if (why) {
        snprintf(err, errsz, "config error at %s: '%s': invalid value '%s' (%s)", where, k->name,
                 joined, why);
        return -1;
    }
    if (strcmp(k->name, "bind") == 0) {
        c->bind_explicit = true;
    }
    return 0;
}

static int
load_file(struct cfg *c, const char *path, char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errsz, "config error at %s: cannot open config file: %s", path, strerror(errno));
        return -1;
    }
    char line[8192];
    static char words[64][1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char where[4200];
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        int n = split_line(line, words, 64);
        if (n < 0) {
            snprintf(err, errsz, "config error at %s: unbalanced quotes or too many words", where);
            rc = -1;
        } else if (n > 0) {
            const char *vals[63];
            for (int i = 1; i < n; i++) {
                vals[i - 1] = words[i];
            }
            rc = apply_kv(c, words[0], vals, n - 1, where, err, errsz);
        }
    }
    fclose(f);
    return rc;
}

struct cfg *
cfg_load(int argc, char **argv, char *err, size_t errsz)
{
    struct cfg *c = cfg_defaults();
    int i = 1;
    const char *file = getenv("RUVIO_CONFIG");

    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        file = argv[1];
        i = 2;
    }
    cfg_file_path[0] = '\0';
    if (file && *file) {
        snprintf(cfg_file_path, sizeof(cfg_file_path), "%s", file);
        if (load_file(c, file, err, errsz) != 0) {
            goto fail;
        }
    }
    const char *dd = getenv("RUVIO_DATA_DIR");
    if (dd && *dd) {
        const char *v[1] = { dd };
        if (apply_kv(c, "dir", v, 1, "$RUVIO_DATA_DIR", err, errsz) != 0) {
            goto fail;
        }
    }
    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
            snprintf(err, errsz, "config error at argument %d: expected --key, got '%s'", i, argv[i]);
            goto fail;
        }
        const char *key = argv[i] + 2;
        const char *vals[64];
        int n = 0;
        i++;
        while (i < argc && strncmp(argv[i], "--", 2) != 0 && n < 64) {
            vals[n++] = argv[i++];
        }
        char where[300];
        snprintf(where, sizeof(where), "--%s", key);
        if (apply_kv(c, key, vals, n, where, err, errsz) != 0) {
            goto fail;
        }
    }
    const char *bad;
    const char *why = cfg_check(c, &bad);
    if (why) {
        snprintf(err, errsz, "config error: '%s': %s", bad, why);
        goto fail;
    }
    return c;
fail:
    cfg_destroy(c);
    return NULL;
}

static void
format_value(const struct cfg *c, const struct cfg_key *k, char *out, size_t outsz)
{
    const char *base = (const char *)c;
    switch (k->kind) {
    case K_INT:
    case K_MEM:
        snprintf(out, outsz, "%lld", (long long)*(const int64_t *)(base + k->off));
        break;
    case K_BOOL:
        snprintf(out, outsz, "%s", *(const bool *)(base + k->off) ? "yes" : "no");
        break;
    case K_ENUM:
        snprintf(out, outsz, "%s", k->enums[*(const int64_t *)(base + k->off)]);
        break;
    case K_STR:
        snprintf(out, outsz, "%s", *(char *const *)(base + k->off));
        break;
    }
}

void
cfg_get(const struct cfg *c, const char *pattern, size_t plen, cfg_visit_fn *fn, void *arg)
{
    char val[4096];
    for (size_t i = 0; i < NKEYS; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        if (glob_match(pattern, plen, k->name, strlen(k->name), true) ||
            (k->alias && glob_match(pattern, plen, k->alias, strlen(k->alias), true))) {
            format_value(c, k, val, sizeof(val));
            fn(arg, k->name, val);
        }
    }
}

bool
cfg_is_live(const char *name, size_t nlen)
{
    const struct cfg_key *k = key_find(name, nlen);
    return k && k->live;
}

int
cfg_set(struct cfg *c, const char *name, size_t nlen, const char *val, size_t vlen, char *err,
        size_t errsz)
{
    const struct cfg_key *k = key_find(name, nlen);
    if (k == NULL) {
        snprintf(err, errsz, "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'",
                 (int)nlen, name);
        return -1;
    }
    if (!k->live) {
        snprintf(err, errsz,
                 "ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config",
                 k->name);
        return -1;
    }
    char *v = rv_strndup(val, vlen);
    const char *why = key_store(c, k, v);
    rv_free(v);
    if (why == NULL) {
        const char *bad;
        why = cfg_check(c, &bad);
    }
    if (why) {
        snprintf(err, errsz, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
                 k->name, why);
        return -1;
    }
    return 0;
}
