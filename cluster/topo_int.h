/* cluster/topo_int.h: internals shared by topo.c, topo_codec.c and topo_text.c;
 * no other module includes it. */
#pragma once
#include "cluster/topo.h"

#define TOPO_CMD_VERSION 1
#define TOPO_SNAP_VERSION 1

/* Refcounted parts of a snapshot, shared between versions until changed. */
struct tp_nodes {
    atomic_uint refs;
    uint32_t n;
    uint16_t *order; /* [n] node indices sorted by id; lives after node[n] */
    struct topo_node node[];
};

struct tp_slots {
    atomic_uint refs;
    uint16_t owner[SLOT_COUNT];
};

struct tp_mig {
    atomic_uint refs;
    uint32_t n, cap;
    struct topo_mig ent[];
};

/* A decoded command; strings point into its own arrays. */
struct tp_cmd {
    uint8_t type;
    char id[TOPO_ID_LEN + 1];
    char id2[TOPO_ID_LEN + 1]; /* primary / SETSLOT target */
    char shard_id[TOPO_ID_LEN + 1];
    char ip[TOPO_IP_MAX + 1];
    char hostname[TOPO_HOSTNAME_MAX + 1];
    uint16_t port, cport, flags, slot;
    uint8_t role;
    bool has_id2;
    uint64_t epoch, host_id;
    uint32_t nranges;
    const uint8_t *ranges; /* nranges x (lo, hi) u16 LE, validated, inside the entry */
};

struct tp_nodes *tp_nodes_alloc(uint32_t n);
void tp_nodes_put(struct tp_nodes *p);
void tp_nodes_sort(struct tp_nodes *p);
struct tp_slots *tp_slots_alloc(void);
void tp_slots_put(struct tp_slots *p);
struct tp_mig *tp_mig_alloc(uint32_t cap);
void tp_mig_put(struct tp_mig *p);
/* A snapshot over the given parts (their references move into it). */
struct topo *tp_assemble(struct tp_nodes *pn, struct tp_slots *ps, struct tp_mig *pm,
                         uint64_t version, uint64_t current_epoch);

/* Index of id in p (binary search over order[]), or -1. */
int tp_find_in(const struct tp_nodes *p, const char *id, size_t len);
/* Position of slot in m[0..n): its index (*found) or where it would go. */
int tp_mig_index(const struct topo_mig *m, uint32_t n, unsigned slot, bool *found);

bool tp_valid_id(const char *s, size_t n);
bool tp_valid_ip(const char *s, size_t n);
bool tp_valid_hostname(const char *s, size_t n);
/* Decode one entry; false with err set when malformed. */
bool tp_cmd_decode(const void *p, size_t len, struct tp_cmd *c, char *err, size_t errsz);

static inline uint16_t
tp_ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
