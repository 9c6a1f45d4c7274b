/* node/features/monitor.c: MONITOR connections and the lines they receive. */
#include "node/features/monitor.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "proto/resp.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* A monitor whose unread lines pass this is closed even when the normal
 * class of client-output-buffer-limit is unlimited: pausing its input, as
 * for a client that pipelines, would not stop the lines. */
#define MONITOR_OUT_MAX (64u * 1024 * 1024)

struct monitor_shard {
    struct conn **v;
    size_t n, cap;
};

struct monitor_msg {
    struct shard_msg base;
    size_t len;
    char line[];
};

size_t
monitor_count(const struct shard *s)
{
    const struct monitor_shard *m = shard_env(s)->monitors;
    return m ? m->n : 0;
}

void
monitor_shard_destroy(struct shard *s)
{
    struct monitor_shard *m = shard_env(s)->monitors;
    if (m != NULL) {
        rv_free(m->v);
        rv_free(m);
        shard_env(s)->monitors = NULL;
    }
}

void
monitor_add(struct conn *c)
{
    struct shard_env *env = c->env;
    struct monitor_shard *m = env->monitors;
    if (c->flags & CONN_MONITOR) {
        return;
    }
    if (m == NULL) {
        m = env->monitors = rv_calloc(1, sizeof(*m));
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 4;
        m->v = rv_realloc(m->v, m->cap * sizeof(*m->v));
    }
    m->v[m->n++] = c;
    c->flags |= CONN_MONITOR;
    atomic_fetch_add_explicit(&env->node->monitors, 1, memory_order_relaxed);
}

void
monitor_release(struct conn *c)
{
    struct monitor_shard *m = c->env->monitors;
    if (!(c->flags & CONN_MONITOR) || m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i] == c) {
            memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
            m->n--;
            break;
        }
    }
    c->flags &= ~CONN_MONITOR;
    atomic_fetch_sub_explicit(&c->env->node->monitors, 1, memory_order_relaxed);
}

/* As the normal class of client-output-buffer-limit, with a backstop. */
static bool
over_limit(struct conn *c)
{
    const struct cfg *cfg = c->env->cfg;
    size_t pending = c->wbuf.len - c->wbuf.off;
    int64_t hard = cfg->net.obl_hard[CFG_OBL_NORMAL], soft = cfg->net.obl_soft[CFG_OBL_NORMAL];
    if (pending > MONITOR_OUT_MAX || (hard > 0 && pending > (size_t)hard)) {
        return true;
    }
    if (soft > 0 && pending > (size_t)soft) {
        if (c->obl_soft_since == 0) {
            c->obl_soft_since = c->env->now_ms;
        }
        return c->env->now_ms - c->obl_soft_since >= cfg->net.obl_secs[CFG_OBL_NORMAL] * 1000;
    }
    c->obl_soft_since = 0;
    return false;
}

static void
deliver_local(struct shard *s, const char *line, size_t len)
{
    struct monitor_shard *m = shard_env(s)->monitors;
    for (size_t i = 0; m && i < m->n; i++) {
        struct conn *c = m->v[i];
        if (c->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY)) {
            continue;
        }
        resp_w_simple(&c->wbuf, line, len);
        if (over_limit(c)) {
            c->flags |= CONN_CLOSE_ASAP;
            c->env->stats.client_output_limit_disconnections++;
        }
        shard_want_write(s, c);
    }
}

static void
run_remote(struct shard *s, struct shard_msg *base)
{
    struct monitor_msg *mm = (struct monitor_msg *)base;
    deliver_local(s, mm->line, mm->len);
    rv_free(mm);
}

/* One argument as Redis quotes it: printable bytes as they are, the usual
 * escapes, anything else as \xHH. */
static void
put_quoted(struct buf *b, const char *p, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        switch (ch) {
        case '\\': buf_append(b, "\\\\", 2); break;
        case '"': buf_append(b, "\\\"", 2); break;
        case '\n': buf_append(b, "\\n", 2); break;
        case '\r': buf_append(b, "\\r", 2); break;
        case '\t': buf_append(b, "\\t", 2); break;
        case '\a': buf_append(b, "\\a", 2); break;
        case '\b': buf_append(b, "\\b", 2); break;
        default:
            if (ch >= 0x20 && ch < 0x7f) {
                buf_putc(b, (char)ch);
            } else {
                buf_appendf(b, "\\x%02x", ch);
            }
        }
    }
    buf_putc(b, '"');
}

static bool
is(const struct rv_str *a, const char *s)
{
    return cmd_arg_is(*a, s);
}

/* Arguments Redis hides: AUTH's, HELLO ... AUTH user pass, MIGRATE ... AUTH
 * pass / AUTH2 user pass. */
static bool
redacted(const struct cmd_spec *cmd, int argc, const struct rv_str *argv, int i)
{
    if (strcmp(cmd->name, "auth") == 0) {
        return true;
    }
    bool hello = strcmp(cmd->name, "hello") == 0, migrate = strcmp(cmd->name, "migrate") == 0;
    if (!hello && !migrate) {
        return false;
    }
    for (int j = hello ? 2 : 6; j < i && j < argc; j++) {
        if (is(&argv[j], "auth")) {
            if (i <= j + (hello ? 2 : 1)) {
                return true;
            }
            j += hello ? 2 : 1;
        } else if (migrate && is(&argv[j], "auth2")) {
            if (i <= j + 2) {
                return true;
            }
            j += 2;
        } else if (migrate && is(&argv[j], "keys")) {
            break;
        }
    }
    return false;
}

void
monitor_feed(struct conn *c, const struct cmd_spec *cmd, int argc, const struct rv_str *argv)
{
    struct shard *me = c->shard;
    struct node *n = c->env->node;
    struct timespec ts;
    struct buf line;
    clock_gettime(CLOCK_REALTIME, &ts);
    buf_init(&line);
    buf_appendf(&line, "%lld.%06ld [%u %s]", (long long)ts.tv_sec, ts.tv_nsec / 1000,
                (unsigned)c->db, (c->flags & CONN_IN_SCRIPT) ? "lua" : c->addr);
    for (int i = 0; i < argc; i++) {
        buf_putc(&line, ' ');
        if (i > 0 && redacted(cmd, argc, argv, i)) {
            buf_append(&line, "\"(redacted)\"", 12);
        } else {
            put_quoted(&line, argv[i].p, argv[i].len);
        }
    }
    deliver_local(me, line.data, line.len);
    long others = atomic_load_explicit(&n->monitors, memory_order_relaxed) -
                  (long)monitor_count(me);
    for (unsigned i = 0; others > 0 && i < n->nshards; i++) {
        struct shard *to = n->shards[i];
        if (to == me) {
            continue;
        }
        struct monitor_msg *mm = rv_malloc(sizeof(*mm) + line.len);
        mm->base.run = run_remote;
        mm->len = line.len;
        memcpy(mm->line, line.data, line.len);
        shard_post(to, &mm->base);
    }
    buf_deinit(&line);
}
