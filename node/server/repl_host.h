/* node/server/repl_host.h: the shard as replication's host
 * (replication/repl_host.h): installed before the first shard opens its
 * persistence (which attaches replication). */
#pragma once

void repl_host_install(void);
