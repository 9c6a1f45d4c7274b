/* base/fs.h: small file-system helpers. */
#pragma once

/* mkdir -p: create path and its missing parents (mode 0755). 0, or -1 with errno. */
int fs_mkdir_p(const char *path);
