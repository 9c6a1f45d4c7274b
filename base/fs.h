/* base/fs.h: small file-system helpers. */
#pragma once
#include <stddef.h>

/* mkdir -p: create path and its missing parents (mode 0755). 0, or -1 with errno. */
int fs_mkdir_p(const char *path);
/* Replace the file at path with len bytes, all or nothing across a crash:
 * written to path.tmp, fsynced, renamed over path, the directory fsynced.
 * 0, or -1 with errno (the old file is then untouched). */
int fs_write_atomic(const char *path, const void *data, size_t len);
