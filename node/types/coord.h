/* node/types/coord.h: the semaphore object and the token format of the
 * coordination commands (node/commands/t_coord.c: INCRBY ... MAX, SEMAPHORE,
 * LEASE, ONCE and LIMIT). See docs/commands-coord.md.
 *
 * LEASE, ONCE and LIMIT are plain strings in the keyspace (TYPE "string"):
 * the lease holder's bytes, the integer 1, the window's request count, each
 * with the key's own deadline. Only SEMAPHORE has an object (KS_COORD, TYPE
 * "coord", encoding "semaphore"): one allocation holding a packed array of
 * {token, deadline} holders. The key's deadline is the latest holder
 * deadline, so an idle semaphore expires on its own. */
#pragma once
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coord_sem;

/* An empty semaphore with room for cap holders; tokens are issued from first
 * upwards. The caller owns it (free with coord_sem_free). NULL = ENOMEM. */
struct coord_sem *coord_sem_create(uint32_t cap, uint64_t first);
void coord_sem_free(void *s); /* NULL is a no-op */
/* A copy with room for at least cap holders (never fewer than s holds). */
struct coord_sem *coord_sem_dup_cap(const struct coord_sem *s, uint32_t cap);
uint32_t coord_sem_len(const struct coord_sem *s); /* stored holders, live or not */
uint32_t coord_sem_cap(const struct coord_sem *s);
/* Holders whose deadline is after now. */
uint32_t coord_sem_live(const struct coord_sem *s, int64_t now);
/* Drop holders whose deadline is <= now; returns how many remain. */
uint32_t coord_sem_prune(struct coord_sem *s, int64_t now);
/* Append a holder (requires len < cap); returns its new token. */
uint64_t coord_sem_add(struct coord_sem *s, int64_t deadline);
/* Index of the live holder with token, or -1. */
int64_t coord_sem_find(const struct coord_sem *s, uint64_t token, int64_t now);
void coord_sem_set_deadline(struct coord_sem *s, uint32_t i, int64_t deadline);
void coord_sem_remove(struct coord_sem *s, uint32_t i); /* order is not kept */
/* SEMAPHORE ... RESTORE: the next token to issue, and a holder appended as
 * given (requires len < cap; the token is not checked). */
void coord_sem_set_next(struct coord_sem *s, uint64_t next);
void coord_sem_restore(struct coord_sem *s, uint64_t token, int64_t deadline);
/* Latest holder deadline (KS_NO_EXPIRE when empty). */
int64_t coord_sem_max_deadline(const struct coord_sem *s);

/* Tokens as clients see them: lower-case hex without leading zeros. */
#define COORD_TOKEN_MAX 16
size_t coord_token_fmt(uint64_t token, char out[COORD_TOKEN_MAX]);
/* Only the canonical form fmt writes is accepted. */
bool coord_token_parse(const char *p, size_t n, uint64_t *out);

extern const struct obj_ops obj_coord_ops;
