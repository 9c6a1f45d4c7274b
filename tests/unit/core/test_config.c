/* Config parsing: sources, errors that name key/line/reason, CONFIG GET/SET. */
#include "node/core/config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char err[1024];

static struct cfg *
load(int argc, const char **argv)
{
    unsetenv("RUVIO_CONFIG");
    unsetenv("RUVIO_DATA_DIR");
    return cfg_load(argc, (char **)argv, err, sizeof(err));
}

static const char *
write_conf(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/ruvio-test-%d.conf", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

Test(config, defaults)
{
    const char *argv[] = { "ruvio" };
    struct cfg *c = load(1, argv);
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(c->net.port, 6379);
    cr_assert_eq(c->node.shards, 1);
    cr_assert_eq(c->persist.durability, CFG_DUR_MEMORY);
    cr_assert_str_eq(c->persist.dir, "./data");
    cr_assert_eq(c->net.proto_max_bulk_len, 512ll * 1024 * 1024);
    cr_assert_eq(c->net.client_query_buffer_limit, 1024ll * 1024 * 1024);
    cfg_destroy(c);
}

Test(config, file_then_flags_with_quotes_and_comments)
{
    const char *path = write_conf("# a comment\n\nport 7000\nbind \"127.0.0.1\"\n"
                                  "requirepass 'p w'\nshard-cpus 0-1\nhz 20 # trailing\n");
    const char *argv[] = { "ruvio", path, "--port", "7001", "--shards", "2" };
    struct cfg *c = load(6, argv);
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(c->net.port, 7001);
    cr_assert_eq(c->node.shards, 2);
    cr_assert_str_eq(c->net.bind, "127.0.0.1");
    cr_assert(c->net.bind_explicit);
    cr_assert_str_eq(c->acl.requirepass, "p w");
    cr_assert_str_eq(c->node.shard_cpus, "0-1");
    cr_assert_eq(c->node.hz, 20);
    cfg_destroy(c);
    unlink(path);
}

Test(config, env_vars)
{
    const char *path = write_conf("port 7100\n");
    setenv("RUVIO_CONFIG", path, 1);
    setenv("RUVIO_DATA_DIR", "/tmp/rvdata", 1);
    const char *argv[] = { "ruvio" };
    struct cfg *c = cfg_load(1, (char **)argv, err, sizeof(err));
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(c->net.port, 7100);
    cr_assert_str_eq(c->persist.dir, "/tmp/rvdata");
    cfg_destroy(c);
    unsetenv("RUVIO_CONFIG");
    unsetenv("RUVIO_DATA_DIR");
    unlink(path);
}

Test(config, unknown_key_names_key_and_line)
{
    const char *path = write_conf("port 7000\n\nfrobnicate yes\n");
    const char *argv[] = { "ruvio", path };
    cr_assert_null(load(2, argv));
    cr_assert(strstr(err, ":3:") != NULL, "%s", err);
    cr_assert(strstr(err, "'frobnicate'") != NULL, "%s", err);
    cr_assert(strstr(err, "unknown") != NULL, "%s", err);
    unlink(path);
}

Test(config, bad_values)
{
    struct {
        const char *k, *v, *why;
    } cases[] = {
        { "--port", "abc", "integer" },
        { "--port", "70000", "between" },
        { "--shards", "0", "between" },
        { "--protected-mode", "maybe", "yes" },
        { "--proto-max-bulk-len", "12q", "memory" },
        { "--durability", "sometimes", "allowed" },
        { "--shard_cpus", "a-b", "CPU list" },
        { "--loglevel", "loud", "allowed" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *argv[] = { "ruvio", cases[i].k, cases[i].v };
        cr_assert_null(load(3, argv), "%s %s accepted", cases[i].k, cases[i].v);
        cr_assert(strstr(err, cases[i].why) != NULL, "%s -> %s", cases[i].k, err);
    }
    const char *argv[] = { "ruvio", "--port" };
    cr_assert_null(load(2, argv));
    cr_assert(strstr(err, "missing value") != NULL, "%s", err);
}

Test(config, unbalanced_quotes)
{
    const char *path = write_conf("bind \"127.0.0.1\n");
    const char *argv[] = { "ruvio", path };
    cr_assert_null(load(2, argv));
    cr_assert(strstr(err, ":1:") != NULL && strstr(err, "quotes") != NULL, "%s", err);
    unlink(path);
}

Test(config, memory_units)
{
    int64_t v;
    cr_assert(cfg_parse_mem("1k", &v) && v == 1000);
    cr_assert(cfg_parse_mem("1kb", &v) && v == 1024);
    cr_assert(cfg_parse_mem("2MB", &v) && v == 2 * 1024 * 1024);
    cr_assert(cfg_parse_mem("1g", &v) && v == 1000000000);
    cr_assert(cfg_parse_mem("123", &v) && v == 123);
    cr_assert(!cfg_parse_mem("-1", &v));
    cr_assert(!cfg_parse_mem("1tb", &v));
    cr_assert(!cfg_parse_mem("", &v));
}

struct seen {
    int n;
    char last[64];
};

static void
visit(void *arg, const char *name, const char *value)
{
    struct seen *s = arg;
    s->n++;
    snprintf(s->last, sizeof(s->last), "%s=%s", name, value);
}

Test(config, get_and_set)
{
    const char *argv[] = { "ruvio" };
    struct cfg *c = load(1, argv);
    struct seen s = { 0 };
    cfg_get(c, "port", 4, visit, &s);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.last, "port=6379");
    s.n = 0;
    cfg_get(c, "*", 1, visit, &s);
    cr_assert_gt(s.n, 15);
    cr_assert_eq(cfg_set(c, "hz", 2, "50", 2, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c->node.hz, 50);
    cr_assert_eq(cfg_set(c, "port", 4, "1", 1, err, sizeof(err)), -1);
    cr_assert(strstr(err, "can't set immutable config") != NULL, "%s", err);
    cr_assert_eq(cfg_set(c, "nope", 4, "1", 1, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "ERR Unknown option or number of arguments for CONFIG SET - 'nope'");
    cr_assert_eq(cfg_set(c, "hz", 2, "x", 1, err, sizeof(err)), -1);
    cr_assert(strstr(err, "'hz'") != NULL, "%s", err);
    struct cfg *d = cfg_dup(c);
    cr_assert_eq(d->node.hz, 50);
    cr_assert_str_eq(d->persist.dir, c->persist.dir);
    cr_assert_neq(d->persist.dir, c->persist.dir);
    cfg_destroy(d);
    cfg_destroy(c);
}

Test(config, cpu_list)
{
    int cpus[16];
    cr_assert_eq(cfg_cpu_list("0,2,4", cpus, 16), 3);
    cr_assert_eq(cpus[2], 4);
    cr_assert_eq(cfg_cpu_list("1-3", cpus, 16), 3);
    cr_assert_eq(cpus[0], 1);
    cr_assert_eq(cfg_cpu_list("3-1", cpus, 16), -1);
    cr_assert_eq(cfg_cpu_list("x", cpus, 16), -1);
}

/* CONFIG REWRITE round trip at the library level: a non-live key the node set
 * itself (cfg_set_state) is appended, quoted values parse back, and a file
 * that already gives every value is left byte for byte. */
Test(config, rewrite_round_trip)
{
    const char *path = write_conf("# top\nhz 10\nshutdown-timeout 7\n");
    const char *argv[] = { "ruvio", path };
    struct cfg *c = load(2, argv);
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(cfg_set_state(c, "on_role_change", "/opt/hook \"x\".sh"), 0);
    cr_assert_eq(cfg_set_state(c, "no-such-key", "1"), -1);
    cr_assert_eq(cfg_set(c, "hz", 2, "20", 2, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg_rewrite(c, err, sizeof(err)), 0, "%s", err);

    char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_assert_str_eq(buf, "# top\nhz 20\nshutdown-timeout 7\n# Generated by CONFIG REWRITE\n"
                          "on_role_change \"/opt/hook \\\"x\\\".sh\"\n");

    struct cfg *again = load(2, argv);
    cr_assert_not_null(again, "%s", err);
    cr_assert_str_eq(again->node.on_role_change, "/opt/hook \"x\".sh");
    cr_assert_eq(again->node.hz, 20);
    cr_assert_eq(cfg_rewrite(again, err, sizeof(err)), 0, "%s", err);
    f = fopen(path, "r");
    char buf2[4096];
    size_t n2 = fread(buf2, 1, sizeof(buf2) - 1, f);
    fclose(f);
    buf2[n2] = '\0';
    cr_assert_str_eq(buf2, buf);
    cfg_destroy(c);
    cfg_destroy(again);
    unlink(path);
}

Test(config, notify_keyspace_events)
{
    const char *argv[] = { "ruvio" };
    struct cfg *c = load(1, argv);
    cr_assert_str_eq(c->node.notify_keyspace_events, "");
    cr_assert_eq(c->node.notify_flags, 0);
    cr_assert_eq(cfg_set(c, "notify-keyspace-events", 22, "Ex", 2, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c->node.notify_keyspace_events, "xE");
    cr_assert_eq(c->node.notify_flags, CFG_NKE_KEYEVENT | CFG_NKE_EXPIRED);
    /* classes without K or E deliver nothing: the flags stay 0 (the hot path's one test) */
    cr_assert_eq(cfg_set(c, "notify-keyspace-events", 22, "A", 1, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c->node.notify_keyspace_events, "A");
    cr_assert_eq(c->node.notify_flags, 0);
    /* n beside A is kept, and survives the re-check another CONFIG SET runs */
    cr_assert_eq(cfg_set(c, "notify-keyspace-events", 22, "KEAnm", 5, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_str_eq(c->node.notify_keyspace_events, "AKEmn");
    cr_assert_eq(cfg_set(c, "hz", 2, "20", 2, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c->node.notify_keyspace_events, "AKEmn");
    cr_assert(c->node.notify_flags & CFG_NKE_NEW);
    cr_assert(c->node.notify_flags & CFG_NKE_KEY_MISS);
    cr_assert(c->node.notify_flags & CFG_NKE_MODULE);
    struct cfg *d = cfg_dup(c);
    cr_assert_eq(d->node.notify_flags, c->node.notify_flags);
    cfg_destroy(d);
    cr_assert_eq(cfg_set(c, "notify-keyspace-events", 22, "KEq", 3, err, sizeof(err)), -1);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument "
                          "'notify-keyspace-events') - Invalid event class character. Use "
                          "'Ag$lshzxeKEtmdn'.");
    cfg_destroy(c);
}
