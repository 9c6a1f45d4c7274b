/* replication/repl_records.c: the replica's Records fast path. protobuf-c
 * would copy every frames field into a fresh message; this reads a packed
 * ReplMsg{records} in place, exactly as protobuf-c would, and leaves every
 * other or unusual message to it (tests/unit/replication/test_link.c and
 * tests/fuzz/fuzz_repl.c compare the two). */
#include "replication/repl_int.h"

#include "base/varint.h"

#define REPL_RECORDS_FIELD 7 /* ReplMsg.records (proto/repl.proto) */

/* One protobuf field at *pp: its number, wire type and value (varint or
 * length-delimited bytes; fixed32/64 are skipped). false when cut short or of
 * a kind the fast path leaves to protobuf-c (groups, field 0). */
static bool
pb_field(const uint8_t **pp, const uint8_t *end, uint32_t *num, int *wt, uint64_t *v,
         const uint8_t **bytes)
{
    uint64_t key;
    const uint8_t *at = *pp;
    /* protobuf-c reads a tag of at most 5 bytes (an overlong one, such as
     * 85 85 85 85 85 00, is an error there): so does the fast path. */
    if (!varint_get_checked(pp, end, &key) || *pp - at > 5 || key >> 3 == 0 ||
        key >> 3 > 0x1fffffff) {
        return false;
    }
    *num = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    switch (*wt) {
    case 0: return varint_get_checked(pp, end, v);
    case 1:
    case 5: {
        size_t w = *wt == 1 ? 8 : 4;
        if ((size_t)(end - *pp) < w) {
            return false;
        }
        *pp += w;
        return true;
    }
    case 2:
        if (!varint_get_checked(pp, end, v) || *v > (uint64_t)(end - *pp)) {
            return false;
        }
        *bytes = *pp;
        *pp += *v;
        return true;
    default: return false;
    }
}

bool
repl_parse_records(const uint8_t *p, size_t n, struct repl_records *out)
{
    const uint8_t *end = p + n, *rec = NULL;
    uint64_t rec_len = 0;
    while (p < end) {
        uint32_t num;
        int wt;
        uint64_t v = 0;
        const uint8_t *b = NULL;
        if (!pb_field(&p, end, &num, &wt, &v, &b)) {
            return false;
        }
        /* Anything but one records field (another oneof member, where the
         * last one wins; a second records, which protobuf merges; unknown
         * fields): never sent by us, protobuf-c decides. */
        if (num != REPL_RECORDS_FIELD || wt != 2 || rec != NULL) {
            return false;
        }
        rec = b;
        rec_len = v;
    }
    if (rec == NULL) {
        return false;
    }
    *out = (struct repl_records){ 0 };
    for (p = rec, end = rec + rec_len; p < end;) {
        uint32_t num;
        int wt;
        uint64_t v = 0;
        const uint8_t *b = NULL;
        if (!pb_field(&p, end, &num, &wt, &v, &b)) {
            return false;
        }
        if (num <= 3 && wt != (num == 3 ? 2 : 0)) {
            return false;
        }
        if (num == 1) {
            out->first_lsn = v;
        } else if (num == 2) {
            out->count = (uint32_t)v;
        } else if (num == 3) {
            out->frames = b; /* a repeated scalar: the last one wins */
            out->len = (size_t)v;
        }
    }
    return true;
}
