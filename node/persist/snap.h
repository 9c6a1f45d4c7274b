/* node/persist/snap.h: checkpoints on request, for SAVE, BGSAVE, BGREWRITEAOF and LASTSAVE
 * (node/commands/cmd_persist.c). The checkpoint machinery itself is described in snap.c.
 * Errors come back as the text of Redis's error reply. */
#pragma once
#include "node/types/obj.h"

#include <stddef.h>
#include <stdint.h>

struct shard;

/* Write a whole checkpoint now, serving nothing meanwhile: 0, or -1 with err
 * (one already running, inside an EXEC that wrote, or the write failed). */
int snap_save(struct shard *s, char *err, size_t errsz);
/* Start a checkpoint in the background, or schedule it for when the open
 * EXEC record is sealed: 0, or -1 with err (one already running, or the file
 * cannot be created). */
int snap_bgsave(struct shard *s, char *err, size_t errsz);
/* When the last checkpoint was written (unix ms). */
int64_t snap_lastsave_ms(struct shard *s);
/* The node state's rebuild commands of shard s (persist_set_state_fn), if any. */
void snap_emit_state(struct shard *s, obj_emit_fn *fn, void *arg);
