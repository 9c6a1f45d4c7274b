/* node/obs/slowlog.c: the slow log's entries (SLOWLOG is in node/commands/cmd_slowlog.c). */
#include "node/obs/slowlog.h"

#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SLOWLOG_MAX_ARGC 32
#define SLOWLOG_MAX_STRING 128

struct slowlog_entry {
    struct slowlog_entry *prev, *next; /* newer, older */
    uint64_t id;
    int64_t time;
    uint64_t us;
    int argc;
    struct rv_str *argv; /* owned copies */
    char addr[64];
    char *name;
};

struct slowlog {
    struct slowlog_entry *newest, *oldest;
    size_t len;
    uint64_t next_id;
};

struct slowlog *
slowlog_create(void)
{
    return rv_calloc(1, sizeof(struct slowlog));
}

static void
entry_free(struct slowlog_entry *e)
{
    for (int i = 0; i < e->argc; i++) {
        rv_free((void *)e->argv[i].p);
    }
    rv_free(e->argv);
    rv_free(e->name);
    rv_free(e);
}

static void
drop_oldest(struct slowlog *sl)
{
    struct slowlog_entry *e = sl->oldest;
    sl->oldest = e->prev;
    if (sl->oldest) {
        sl->oldest->next = NULL;
    } else {
        sl->newest = NULL;
    }
    sl->len--;
    entry_free(e);
}

void
slowlog_reset(struct slowlog *sl)
{
    while (sl && sl->len > 0) {
        drop_oldest(sl);
    }
}

void
slowlog_destroy(struct slowlog *sl)
{
    if (sl) {
        slowlog_reset(sl);
        rv_free(sl);
    }
}

size_t
slowlog_len(const struct slowlog *sl)
{
    return sl ? sl->len : 0;
}

static struct rv_str
dup_str(const char *p, size_t n)
{
    char *d = rv_malloc(n + 1);
    memcpy(d, p, n);
    d[n] = '\0';
    return (struct rv_str){ d, n };
}

static bool
lower_is(const struct cmd_spec *cmd, const char *name)
{
    return strcmp(cmd->name, name) == 0;
}

/* Arguments Redis hides from the slow log (redactClientCommandArgument). */
static bool
secret_arg(const struct cmd_spec *cmd, int argc, struct rv_str *argv, int i)
{
    const struct cmd_spec *top = cmd->parent ? cmd->parent : cmd;
    if (lower_is(top, "auth")) {
        return i >= 1;
    }
    if (lower_is(top, "hello") || lower_is(top, "migrate")) {
        /* HELLO ... AUTH user pass; MIGRATE ... AUTH pass | AUTH2 user pass */
        for (int k = 1; k < i; k++) {
            if (cmd_arg_is(argv[k], "auth")) {
                return i - k <= (lower_is(top, "hello") ? 2 : 1);
            }
            if (cmd_arg_is(argv[k], "auth2")) {
                return i - k <= 2;
            }
        }
        return false;
    }
    if (cmd->parent && lower_is(top, "acl") && lower_is(cmd, "setuser")) {
        return i >= 3 && argv[i].len > 0 && strchr("><#!", argv[i].p[0]) != NULL;
    }
    if (cmd->parent && lower_is(top, "config") && lower_is(cmd, "set")) {
        return i >= 3 && (i - 2) % 2 == 1 &&
               (cmd_arg_is(argv[i - 1], "requirepass") || cmd_arg_is(argv[i - 1], "masterauth"));
    }
    return false;
}

void
slowlog_add(struct slowlog *sl, struct conn *c, const struct cmd_spec *cmd, int argc,
            struct rv_str *argv, uint64_t us, int64_t unix_s, size_t maxlen)
{
    if (maxlen == 0) {
        slowlog_reset(sl); /* as Redis: the push is trimmed away at once */
        return;
    }
    struct slowlog_entry *e = rv_calloc(1, sizeof(*e));
    e->id = sl->next_id++;
    e->time = unix_s;
    e->us = us;
    e->argc = argc > SLOWLOG_MAX_ARGC ? SLOWLOG_MAX_ARGC : argc;
    e->argv = rv_malloc(sizeof(*e->argv) * (size_t)e->argc);
    for (int i = 0; i < e->argc; i++) {
        char more[96];
        if (secret_arg(cmd, argc, argv, i)) {
            e->argv[i] = dup_str("(redacted)", 10);
        } else if (argc > SLOWLOG_MAX_ARGC && i == e->argc - 1) {
            int n = snprintf(more, sizeof(more), "... (%d more arguments)", argc - e->argc + 1);
            e->argv[i] = dup_str(more, (size_t)n);
        } else if (argv[i].len > SLOWLOG_MAX_STRING) {
            int n = snprintf(more, sizeof(more), "... (%zu more bytes)",
                             argv[i].len - SLOWLOG_MAX_STRING);
            char *d = rv_malloc(SLOWLOG_MAX_STRING + (size_t)n + 1);
            memcpy(d, argv[i].p, SLOWLOG_MAX_STRING);
            memcpy(d + SLOWLOG_MAX_STRING, more, (size_t)n + 1);
            e->argv[i] = (struct rv_str){ d, SLOWLOG_MAX_STRING + (size_t)n };
        } else {
            e->argv[i] = dup_str(argv[i].p, argv[i].len);
        }
    }
    snprintf(e->addr, sizeof(e->addr), "%s", c->addr);
    e->name = c->name ? rv_strndup(c->name, strlen(c->name)) : NULL;
    e->next = sl->newest;
    if (sl->newest) {
        sl->newest->prev = e;
    } else {
        sl->oldest = e;
    }
    sl->newest = e;
    sl->len++;
    while (sl->len > maxlen) {
        drop_oldest(sl);
    }
}

const struct slowlog_entry *
slowlog_first(const struct slowlog *sl)
{
    return sl ? sl->newest : NULL;
}

const struct slowlog_entry *
slowlog_next(const struct slowlog_entry *e)
{
    return e->next;
}

void
slowlog_entry_view(const struct slowlog_entry *e, struct slowlog_view *v)
{
    *v = (struct slowlog_view){ e->id, e->time, e->us, e->argc, e->argv, e->addr, e->name };
}
