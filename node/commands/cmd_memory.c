/* node/commands/cmd_memory.c: MEMORY STATS, DOCTOR, PURGE, MALLOC-STATS (MEMORY USAGE
 * is in cmd_generic.c, HELP in cmd_server.c). Figures come from evict.c: node
 * totals are the sum of the shards' charges, key counts are this shard's. */
#include "base/buf.h"
#include "base/mem.h"
#include "node/commands/cmds.h"
#include "node/core/conn.h"
#include "node/features/evict.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <stdio.h>
#include <string.h>

static void
kv_int(struct conn *c, const char *name, long long v)
{
    reply_bulk_cstr(c, name);
    reply_int(c, v);
}

static void
kv_dbl(struct conn *c, const char *name, double v)
{
    reply_bulk_cstr(c, name);
    reply_double(c, v);
}

CMD_HANDLER(memory_stats)
{
    (void)argc;
    (void)argv;
    struct shard *s = c->shard;
    long long used = evict_node_used(s), shard = evict_shard_used(s), peak = evict_peak(s);
    size_t keys = shard_keys(c->env, NULL), clients = evict_clients_mem(s);
    size_t alloc = rv_mem_allocated(), active = rv_mem_active(), resident = rv_mem_resident();
    size_t rss = rv_mem_rss();
    long long overhead = (long long)clients;
    long long dataset = shard > overhead ? shard - overhead : 0;
    if (peak < shard) {
        peak = shard;
    }
    reply_map(c, 21);
    kv_int(c, "peak.allocated", peak);
    kv_int(c, "total.allocated", used);
    kv_int(c, "startup.allocated", 0);
    kv_int(c, "replication.backlog", 0);
    kv_int(c, "clients.slaves", 0);
    kv_int(c, "clients.normal", (long long)clients);
    kv_int(c, "overhead.total", overhead);
    kv_int(c, "keys.count", (long long)keys);
    kv_int(c, "keys.bytes-per-key", keys ? dataset / (long long)keys : 0);
    kv_int(c, "dataset.bytes", dataset);
    kv_dbl(c, "dataset.percentage", shard > 0 ? 100.0 * (double)dataset / (double)shard : 0);
    kv_dbl(c, "peak.percentage", peak > 0 ? 100.0 * (double)shard / (double)peak : 0);
    kv_int(c, "allocator.allocated", (long long)alloc);
    kv_int(c, "allocator.active", (long long)active);
    kv_int(c, "allocator.resident", (long long)resident);
    kv_dbl(c, "allocator-fragmentation.ratio", alloc ? (double)active / (double)alloc : 0);
    kv_int(c, "allocator-fragmentation.bytes", (long long)active - (long long)alloc);
    kv_dbl(c, "fragmentation", used > 0 ? (double)rss / (double)used : 0);
    kv_int(c, "fragmentation.bytes", (long long)rss - used);
    kv_int(c, "shard.allocated", shard);
    kv_int(c, "shard.maxmemory", evict_shard_limit(s));
}

CMD_HANDLER(memory_doctor)
{
    (void)argc;
    (void)argv;
    struct shard *s = c->shard;
    long long used = evict_node_used(s), shard = evict_shard_used(s), peak = evict_peak(s);
    long long limit = evict_shard_limit(s);
    size_t rss = rv_mem_rss(), clients = evict_clients_mem(s), nconn = shard_conn_count(s);
    char out[1024];
    size_t n = 0;
    if (used < 5 * 1024 * 1024) {
        n = (size_t)snprintf(out, sizeof(out),
                             "This node holds very little data (%lld bytes); "
                             "there is nothing to diagnose yet.\n",
                             used);
        reply_verbatim(c, out, n);
        return;
    }
    if (peak > shard + shard / 2) {
        n += (size_t)snprintf(out + n, sizeof(out) - n,
                              " * Peak: this shard once held %lld bytes, %.1fx what it holds "
                              "now.\n",
                              peak, (double)peak / (double)shard);
    }
    if ((double)rss > 1.4 * (double)used && rss > 16u * 1024 * 1024) {
        n += (size_t)snprintf(out + n, sizeof(out) - n,
                              " * Fragmentation: resident memory is %.2fx the charged memory; "
                              "MEMORY PURGE returns free pages now, the allocator does so within "
                              "seconds on its own.\n",
                              (double)rss / (double)used);
    }
    if (nconn > 0 && clients / nconn > 256u * 1024) {
        n += (size_t)snprintf(out + n, sizeof(out) - n,
                              " * Clients: connection buffers average %zu bytes; see "
                              "client-output-buffer-limit.\n",
                              clients / nconn);
    }
    if (limit > 0 && shard > limit) {
        n += (size_t)snprintf(out + n, sizeof(out) - n,
                              " * Budget: this shard holds %lld bytes, over its %lld-byte "
                              "budget.\n",
                              shard, limit);
    }
    if (n == 0) {
        n = (size_t)snprintf(out, sizeof(out), "No memory problem found.\n");
    } else {
        char tmp[1100];
        int m = snprintf(tmp, sizeof(tmp), "Memory report:\n%s", out);
        memcpy(out, tmp, (size_t)m < sizeof(out) ? (size_t)m + 1 : sizeof(out));
        n = strlen(out);
    }
    reply_verbatim(c, out, n);
}

CMD_HANDLER(memory_purge)
{
    (void)argc;
    (void)argv;
    if (rv_mem_purge() != 0) {
        reply_errf(c, "ERR Error purging dirty pages");
        return;
    }
    reply_ok(c);
}

static void
stats_piece(void *arg, const char *text)
{
    struct buf *b = arg;
    buf_append(b, text, strlen(text));
}

CMD_HANDLER(memory_malloc_stats)
{
    (void)argc;
    (void)argv;
    struct buf b;
    buf_init(&b);
    rv_mem_stats_print(stats_piece, &b);
    reply_verbatim(c, b.data ? b.data : "", b.len);
    buf_deinit(&b);
}
