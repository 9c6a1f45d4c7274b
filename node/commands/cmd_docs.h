/* node/commands/cmd_docs.h: COMMAND DOCS' "arguments" tree, built from a row's
 * syntax string (cmd_table.c: "key value [NX | XX] [EX seconds | PX milliseconds]").
 * The grammar is the one docs/commands.md shows: UPPER words are tokens,
 * lower words arguments, [..] optional, <..> a group, '|' alternatives of the
 * units either side, "..." repeats the unit before it, and "x [x ...]" is x
 * repeated. Each argument's type comes from its name (key, count, score, ...). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct conn;
struct cmd_spec;

/* The number of top-level arguments of s (0: no "arguments" field). */
size_t docs_arg_count(const struct cmd_spec *s);
/* True when s's whole syntax string parses (brackets balanced, nothing left
 * over): the unit test checks every row. */
bool docs_syntax_ok(const struct cmd_spec *s);
/* Reply s's arguments as COMMAND DOCS does: an array of maps (name, type,
 * key_spec_index, token, since, flags, arguments), with the names, types and
 * since of cmd_docs_args.h where the syntax string does not tell them. */
void docs_reply_args(struct conn *c, const struct cmd_spec *s);
/* The number of Redis's extra doc fields s has (doc_flags, deprecated_since,
 * replaced_by, history), and their replies, as Redis orders them: after
 * complexity, before arguments. */
size_t docs_meta_count(const struct cmd_spec *s);
void docs_reply_meta(struct conn *c, const struct cmd_spec *s);
/* True when Redis 7.0's COMMAND DOCS gives s no "subcommands" field (subs)
 * or no "arguments" field (!subs) though Ruvio has them: DEBUG's
 * subcommands, COMMAND GETKEYS's, GETKEYSANDFLAGS's and REPLCONF's arguments. */
bool docs_hides(const struct cmd_spec *s, bool subs);
/* True when the metadata table is sorted (bsearch): the unit test checks it. */
bool docs_meta_sorted(void);
/* True when s's row of argument fixes (cmd_docs_args.h) has one word per
 * node of its tree, or s has none; and when that table is sorted. */
bool docs_args_ok(const struct cmd_spec *s);
bool docs_args_sorted(void);
