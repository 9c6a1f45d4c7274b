/* The command table is the single source of truth: check its rows. */
#include "node/core/cmd.h"
#include "node/commands/cmd_docs.h"
#include "node/commands/cmds.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
setup(void)
{
    cmds_init();
}

TestSuite(cmd_table, .init = setup);

static void
check_row(const struct cmd_spec *s)
{
    cr_assert(s->name && s->name[0], "row without a name");
    for (const char *p = s->name; *p; p++) {
        cr_assert(!isupper((unsigned char)*p), "%s: names are lower case", s->name);
    }
    cr_assert(s->arity != 0, "%s: arity 0", s->name);
    cr_assert(s->fn || s->subs, "%s: no handler", s->name);
    cr_assert(s->summary && s->since && s->group && s->complexity, "%s: missing docs", s->name);
    if (s->first > 0) {
        cr_assert(s->step > 0, "%s: key step", s->name);
        cr_assert(s->last < 0 || s->last >= s->first, "%s: last key before first", s->name);
        /* A fixed last key must fit the arity; "key [key ...]" with a variable
         * arity may also be empty (SUNSUBSCRIBE). */
        int need = s->last < 0 ? s->first + 1 : s->last + 1;
        cr_assert(s->arity < 0 ? s->last < 0 || -s->arity >= need : s->arity >= need,
                  "%s: arity cannot hold its keys", s->name);
    } else {
        cr_assert(s->last == 0 && s->step == 0, "%s: keys without first", s->name);
    }
    cr_assert(!((s->flags & CMD_WRITE) && (s->flags & CMD_READONLY)), "%s: write and readonly",
              s->name);
    /* COMMAND DOCS builds its arguments tree from the syntax string */
    cr_assert(docs_syntax_ok(s), "%s: syntax string does not parse: \"%s\"", s->name,
              s->args ? s->args : "");
    cr_assert(docs_args_ok(s), "%s: its row in cmd_docs_args.h does not match its syntax tree",
              s->name);
}

Test(cmd_table, rows_are_well_formed)
{
    cr_assert(cmd_count() > 50);
    for (size_t i = 0; i < cmd_count(); i++) {
        const struct cmd_spec *s = cmd_at(i);
        check_row(s);
        for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
            check_row(sub);
            cr_assert_eq(sub->parent, s);
        }
    }
}

Test(cmd_table, names_are_unique_and_found_case_insensitively)
{
    for (size_t i = 0; i < cmd_count(); i++) {
        const struct cmd_spec *s = cmd_at(i);
        char up[64];
        size_t n = strlen(s->name);
        for (size_t j = 0; j <= n; j++) {
            up[j] = (char)toupper((unsigned char)s->name[j]);
        }
        cr_assert_eq(cmd_lookup(s->name, n), s, "%s", s->name);
        cr_assert_eq(cmd_lookup(up, n), s, "%s", s->name);
        for (size_t j = i + 1; j < cmd_count(); j++) {
            cr_assert(strcmp(s->name, cmd_at(j)->name) != 0, "duplicate %s", s->name);
        }
    }
    cr_assert_null(cmd_lookup("nosuchcommand", 13));
    cr_assert_null(cmd_lookup("ge", 2));
    cr_assert_null(cmd_lookup("gett", 4));
}

Test(cmd_table, ids_cover_every_row)
{
    size_t n = 0;
    for (size_t i = 0; i < cmd_count(); i++) {
        n++;
        for (const struct cmd_spec *sub = cmd_at(i)->subs; sub && sub->name; sub++) {
            n++;
        }
    }
    cr_assert_eq(cmd_id_count(), n);
    for (uint32_t id = 0; id < n; id++) {
        cr_assert_eq(cmd_by_id(id)->id, id);
    }
}

Test(cmd_table, every_command_is_documented)
{
    /* docs/commands.md, plus docs/commands-<group>.md pages where a group has its own. */
    static char doc[4 << 20];
    size_t len = 0;
    static const char *const pages[] = { "",     "-list", "-hash",  "-set",    "-zset", "-bitmap",
                                         "-hll", "-geo",  "-coord", "-stream", "-json" };
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/docs/commands%s.md", RV_SOURCE_DIR, pages[i]);
        FILE *f = fopen(path, "r");
        cr_assert(f != NULL || i > 0, "docs/commands.md missing");
        if (f) {
            len += fread(doc + len, 1, sizeof(doc) - 1 - len, f);
            fclose(f);
        }
    }
    doc[len] = '\0';
    for (size_t i = 0; i < cmd_count(); i++) {
        const struct cmd_spec *s = cmd_at(i);
        char needle[96];
        snprintf(needle, sizeof(needle), "`%s", s->name);
        for (char *p = needle; *p; p++) {
            *p = (char)toupper((unsigned char)*p);
        }
        cr_assert_not_null(strstr(doc, needle), "%s is not in docs/commands.md", needle + 1);
        for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
            char subn[96];
            snprintf(subn, sizeof(subn), "`%s %s", s->name, sub->name);
            for (char *p = subn; *p; p++) {
                *p = (char)toupper((unsigned char)*p);
            }
            cr_assert_not_null(strstr(doc, subn), "%s is not in docs/commands.md", subn + 1);
        }
    }
}

Test(cmd_table, arg_parsers_follow_redis)
{
    int64_t v;
    struct {
        const char *s;
        bool ok;
        int64_t v;
    } ints[] = {
        { "0", true, 0 },
        { "-1", true, -1 },
        { "9223372036854775807", true, INT64_MAX },
        { "-9223372036854775808", true, INT64_MIN },
        { "9223372036854775808", false, 0 },
        { "01", false, 0 },
        { "+1", false, 0 },
        { "-0", false, 0 },
        { " 1", false, 0 },
        { "1 ", false, 0 },
        { "", false, 0 },
        { "-", false, 0 },
        { "1a", false, 0 },
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        struct rv_str a = { ints[i].s, strlen(ints[i].s) };
        cr_assert_eq(cmd_arg_int(a, &v), ints[i].ok, "'%s'", ints[i].s);
        if (ints[i].ok) {
            cr_assert_eq(v, ints[i].v);
        }
    }
    long double d;
    cr_assert(cmd_arg_double((struct rv_str){ "1.5", 3 }, &d) && d == 1.5L);
    cr_assert(cmd_arg_double((struct rv_str){ "inf", 3 }, &d));
    cr_assert(!cmd_arg_double((struct rv_str){ "nan", 3 }, &d));
    cr_assert(!cmd_arg_double((struct rv_str){ " 1", 2 }, &d));
    cr_assert(!cmd_arg_double((struct rv_str){ "1x", 2 }, &d));
    cr_assert(!cmd_arg_double((struct rv_str){ "", 0 }, &d));
}

Test(cmd_table, docs_metadata_table_is_sorted)
{
    cr_assert(docs_meta_sorted(),
              "node/commands/cmd_docs.c: docs_meta[] must be sorted by name (bsearch)");
    cr_assert(docs_args_sorted(),
              "node/commands/cmd_docs_args.h: docs_args[] must be sorted by name (bsearch)");
}
