/* node/features/clientinfo.c: the CLIENT LIST line of a connection. */
#include "node/features/clientinfo.h"

#include "base/buf.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/shard.h"
#include "node/features/acl.h"
#include "node/features/multi.h"
#include "node/features/pubsub.h"
#include "node/features/tracking.h"

#include <stdio.h>
#include <string.h>

void
clientinfo_line(struct conn *me, struct conn *c, struct buf *out)
{
    char line[1024], full[96] = "NULL";
    int64_t now = me->env->now_ms;
    char flags[16];
    size_t nf = 0;
    /* Redis's letters, in its order */
    static const struct {
        uint32_t bit;
        char ch;
    } letters[] = {
        { CONN_MONITOR, 'O' },
        { CONN_PUBSUB, 'P' },
        { CONN_MULTI, 'x' },
        { CONN_BLOCKED, 'b' },
        { CONN_CLOSE_AFTER_REPLY, 'c' },
        { CONN_CLOSE_ASAP, 'A' },
        { CONN_READONLY, 'r' },
        { CONN_NO_EVICT, 'e' },
        { CONN_NO_TOUCH, 'T' },
    };
    for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++) {
        if (c->flags & letters[i].bit) {
            flags[nf++] = letters[i].ch;
        }
        if (letters[i].bit == CONN_BLOCKED) {
            nf += tracking_letters(c, flags + nf); /* t, R, B: after b, as Redis */
        }
    }
    if (nf == 0) {
        flags[nf++] = 'N';
    }
    flags[nf] = '\0';
    if (c->last_cmd) {
        cmd_fullname(c->last_cmd, full, sizeof(full));
    }
    size_t qbuf = c->rbuf.len - c->rbuf.off;
    size_t sub, psub, ssub;
    pubsub_counts(c, &sub, &psub, &ssub);
    size_t qmem;
    long queued = multi_queued(c, &qmem);
    int n = snprintf(
        line, sizeof(line),
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%u "
        "sub=%zu psub=%zu ssub=%zu multi=%ld qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=%zu "
        "rbs=%zu rbp=%zu obl=0 oll=0 omem=%zu tot-mem=%zu events=r%s cmd=%s "
        "user=%s redir=%lld resp=%d\n",
        (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name ? c->name : "",
        (long long)((now - c->ctime_ms) / 1000), (long long)((now - c->last_ms) / 1000), flags,
        (unsigned)c->db, sub, psub, ssub, queued, qbuf, c->rbuf.cap - c->rbuf.len, qmem,
        c->rbuf.cap, c->rbuf.len, c->wbuf.len - c->wbuf.off,
        sizeof(*c) + c->rbuf.cap + c->wbuf.cap + qmem, (c->flags & CONN_WRITE_WAIT) ? "w" : "",
        full, acl_user_name(c->user), (long long)tracking_redirect(c), c->proto);
    /* Fields Redis added after resp: drop the newline and append them. */
    n = n > 0 && (size_t)n < sizeof(line) ? n - 1 : 0;
    n += snprintf(line + n, sizeof(line) - (size_t)n, " watch=%zu lib-name=%s lib-ver=%s\n",
                  multi_watch_count(c), c->lib_name ? c->lib_name : "",
                  c->lib_ver ? c->lib_ver : "");
    if ((size_t)n >= sizeof(line)) {
        n = (int)strlen(line);
    }
    buf_append(out, line, (size_t)n);
}
