/* node/persist/reshard.h: start on a data directory written with another shard
 * count by moving every key to the shard that owns its slot (reshard.c). */
#pragma once
#include <stddef.h>

struct node;

/* Before the shards are created: finish what an interrupted redistribution
 * left (undo, resume or delete the old data, whichever its state says); when
 * dir holds data of another shard count (or a resumed redistribution), move it
 * aside and return 1 with the old count in *old_n; 0 when nothing is to do;
 * -1 with err on failure. */
int reshard_prepare(const char *dir, unsigned nshards, unsigned *old_n, char *err, size_t errsz);
/* After the (empty) shards are created, before they start: load the old data
 * and rebuild every key in its owner, checkpoint, write the layout, commit
 * (rename the old data to resharding.old) and delete the old data. */
/* How the old shards' directories are read: as shards that never serve
 * (the server's shard_create_offline and shard_destroy). */
struct shard;
struct reshard_source {
    struct shard *(*open)(struct node *n, unsigned id, const char *dir, char *err, size_t errsz);
    void (*close)(struct shard *s);
};
int reshard_run(struct node *n, const char *dir, unsigned old_n, const struct reshard_source *src,
                char *err, size_t errsz);
/* Record the shard count of this start in dir/layout. */
int reshard_write_layout(const char *dir, unsigned n);
