#include "base/fs.h"
#include "base/rand.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(rand, hex_ids_are_hex_and_differ)
{
    char a[41], b[41];
    rand_hex(a, 40);
    rand_hex(b, 40);
    cr_assert_eq(strlen(a), 40);
    cr_assert_eq(strspn(a, "0123456789abcdef"), 40);
    cr_assert_str_neq(a, b);
    cr_assert_neq(rand_u64(), rand_u64());
}

Test(fs, mkdir_p_creates_parents_and_accepts_existing)
{
    char base[64], deep[128];
    snprintf(base, sizeof(base), "/tmp/ruvio-test-fs-%d", (int)getpid());
    snprintf(deep, sizeof(deep), "%s/a/b/c", base);
    cr_assert_eq(fs_mkdir_p(deep), 0);
    struct stat st;
    cr_assert_eq(stat(deep, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(fs_mkdir_p(deep), 0);
    /* A path through a regular file fails. */
    char file[160], under[200];
    snprintf(file, sizeof(file), "%s/f", base);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(under, sizeof(under), "%s/x", file);
    cr_assert_eq(fs_mkdir_p(under), -1);
    unlink(file);
    rmdir(deep);
    snprintf(deep, sizeof(deep), "%s/a/b", base);
    rmdir(deep);
    snprintf(deep, sizeof(deep), "%s/a", base);
    rmdir(deep);
    rmdir(base);
}
