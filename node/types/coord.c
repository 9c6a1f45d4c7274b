/* node/types/coord.c: the semaphore object (KS_COORD) and its obj_ops, and the
 * token format (see coord.h); the commands are node/commands/t_coord.c. */
#include "node/types/coord.h"

#include "base/mem.h"
#include "node/keyspace/ks.h"

#include <string.h>

/* ------------------------------------------------------- semaphore object */

struct coord_hold {
    uint64_t token;
    int64_t deadline; /* unix ms */
};

struct coord_sem {
    uint32_t n; /* holders stored (some may be expired) */
    uint32_t cap;
    uint64_t next; /* next token to issue */
    struct coord_hold h[];
};

struct coord_sem *
coord_sem_create(uint32_t cap, uint64_t first)
{
    struct coord_sem *s = rv_malloc(sizeof(*s) + (size_t)cap * sizeof(s->h[0]));

    if (s == NULL) {
        return NULL;
    }
    s->n = 0;
    s->cap = cap;
    s->next = first;
    return s;
}

void
coord_sem_free(void *s)
{
    rv_free(s);
}

struct coord_sem *
coord_sem_dup_cap(const struct coord_sem *s, uint32_t cap)
{
    struct coord_sem *t;

    if (cap < s->n) {
        cap = s->n;
    }
    t = coord_sem_create(cap, s->next);
    if (t != NULL) {
        t->n = s->n;
        memcpy(t->h, s->h, (size_t)s->n * sizeof(s->h[0]));
    }
    return t;
}

uint32_t
coord_sem_len(const struct coord_sem *s)
{
    return s->n;
}

uint32_t
coord_sem_cap(const struct coord_sem *s)
{
    return s->cap;
}

uint32_t
coord_sem_live(const struct coord_sem *s, int64_t now)
{
    uint32_t live = 0;

    for (uint32_t i = 0; i < s->n; i++) {
        live += s->h[i].deadline > now;
    }
    return live;
}

uint32_t
coord_sem_prune(struct coord_sem *s, int64_t now)
{
    uint32_t j = 0;

    for (uint32_t i = 0; i < s->n; i++) {
        if (s->h[i].deadline > now) {
            s->h[j++] = s->h[i];
        }
    }
    s->n = j;
    return j;
}

uint64_t
coord_sem_add(struct coord_sem *s, int64_t deadline)
{
    uint64_t tok = s->next++;

    s->h[s->n].token = tok;
    s->h[s->n].deadline = deadline;
    s->n++;
    return tok;
}

int64_t
coord_sem_find(const struct coord_sem *s, uint64_t token, int64_t now)
{
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->h[i].token == token && s->h[i].deadline > now) {
            return i;
        }
    }
    return -1;
}

void
coord_sem_set_deadline(struct coord_sem *s, uint32_t i, int64_t deadline)
{
    s->h[i].deadline = deadline;
}

void
coord_sem_remove(struct coord_sem *s, uint32_t i)
{
    s->h[i] = s->h[--s->n];
}

int64_t
coord_sem_max_deadline(const struct coord_sem *s)
{
    int64_t m = KS_NO_EXPIRE;

    for (uint32_t i = 0; i < s->n; i++) {
        if (m == KS_NO_EXPIRE || s->h[i].deadline > m) {
            m = s->h[i].deadline;
        }
    }
    return m;
}

void
coord_sem_set_next(struct coord_sem *s, uint64_t next)
{
    s->next = next;
}

void
coord_sem_restore(struct coord_sem *s, uint64_t token, int64_t deadline)
{
    s->h[s->n].token = token;
    s->h[s->n].deadline = deadline;
    s->n++;
}

size_t
coord_token_fmt(uint64_t token, char out[COORD_TOKEN_MAX])
{
    static const char hex[] = "0123456789abcdef";
    char tmp[COORD_TOKEN_MAX];
    size_t n = 0;

    do {
        tmp[n++] = hex[token & 0xf];
        token >>= 4;
    } while (token != 0);
    for (size_t i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
    return n;
}

bool
coord_token_parse(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0 || n > COORD_TOKEN_MAX || (p[0] == '0' && n > 1)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        if (p[i] >= '0' && p[i] <= '9') {
            d = (unsigned)(p[i] - '0');
        } else if (p[i] >= 'a' && p[i] <= 'f') {
            d = (unsigned)(p[i] - 'a' + 10);
        } else {
            return false;
        }
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

static const char *
sem_encoding(const struct ks_entry *e)
{
    (void)e;
    return "semaphore";
}

static size_t
sem_mem(const struct ks_entry *e)
{
    const struct coord_sem *s = ks_entry_ptr(e);
    return sizeof(*s) + (size_t)s->cap * sizeof(s->h[0]);
}

static void *
sem_dup(const struct ks_entry *e)
{
    const struct coord_sem *s = ks_entry_ptr(e);
    return coord_sem_dup_cap(s, s->cap);
}

/* SEMAPHORE key RESTORE next [token deadline ...]: the holders as stored
 * (expired ones included), with their tokens and absolute deadlines. */
static void
sem_emit(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    const struct coord_sem *s = ks_entry_ptr(e);
    struct obj_emitter b;
    char *next;

    obj_emit_init(&b, fn, arg, "SEMAPHORE", ks_entry_key(e));
    obj_emit_head(&b, (struct rv_str){ "RESTORE", 7 });
    next = obj_emit_scratch(&b);
    obj_emit_head(&b, (struct rv_str){ next, coord_token_fmt(s->next, next) });
    for (uint32_t i = 0; i < s->n; i++) {
        char *tok = obj_emit_scratch(&b);
        obj_emit_arg(&b, (struct rv_str){ tok, coord_token_fmt(s->h[i].token, tok) });
        obj_emit_int(&b, s->h[i].deadline);
        obj_emit_elem(&b);
    }
    if (s->n == 0) {
        b.fn(b.arg, b.argc, b.argv);
    }
    obj_emit_flush(&b);
}

const struct obj_ops obj_coord_ops = {
    .type_name = "coord",
    .encoding = sem_encoding,
    .mem = sem_mem,
    .dup = sem_dup,
    .free = coord_sem_free,
    .emit = sem_emit,
};
