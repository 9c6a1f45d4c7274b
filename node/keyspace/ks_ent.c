/* node/keyspace/ks_ent.c: keyspace entry accessors (the layout is described in
 * ks.c). */
#include "node/keyspace/ks.h"

#include "base/mem.h"
#include "base/strnum.h"
#include "node/keyspace/ks_priv.h"

#include <string.h>

bool
ks_str_parse_int(const char *p, size_t n, int64_t *out)
{
    return str_to_i64(p, n, out);
}

/* ------------------------------------------------------------- accessors */

enum ks_type
ks_entry_type(const struct ks_entry *e)
{
    return (enum ks_type)(e->flags & EF_TYPE);
}

struct rv_str
ks_entry_key(const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return (struct rv_str){ (const char *)l.key, l.klen };
}

int64_t
ks_entry_expire(const struct ks_entry *e)
{
    return ent_deadline(e);
}

bool
ks_entry_live(const struct ks_entry *e, int64_t now_ms)
{
    if (e == NULL) {
        return false;
    }
    int64_t dl = ent_deadline(e);
    return dl == KS_NO_EXPIRE || dl > now_ms;
}

uint64_t
ks_entry_idle_ms(const struct ks_entry *e, int64_t now_ms)
{
    uint32_t now = (uint32_t)((uint64_t)(now_ms / 1000) & KS_CLK_MASK);
    return (uint64_t)((now - ent_clk_get(e)) & KS_CLK_MASK) * 1000;
}

void
ks_entry_set_idle(struct ks_entry *e, int64_t now_ms, uint64_t idle_ms)
{
    uint64_t idle_s = idle_ms / 1000;
    if (idle_s > KS_CLK_MASK) {
        idle_s = KS_CLK_MASK;
    }
    ent_clk_set(e, (uint32_t)(((uint64_t)(now_ms / 1000) - idle_s) & KS_CLK_MASK));
}

unsigned
ks_entry_freq(const struct ks *ks, const struct ks_entry *e, int64_t now_ms)
{
    return lfu_decayed(ks, ent_clk_get(e), now_ms);
}

void
ks_entry_set_freq(struct ks_entry *e, int64_t now_ms, unsigned freq)
{
    ent_clk_set(e, lfu_minutes(now_ms) << 8 | (freq > 255 ? 255 : freq));
}

void
ks_set_lfu(struct ks *ks, bool on, unsigned log_factor, unsigned decay_min)
{
    ks->lfu = on;
    ks->lfu_log_factor = log_factor;
    ks->lfu_decay_min = decay_min;
}

bool
ks_lfu(const struct ks *ks)
{
    return ks->lfu;
}

size_t
ks_entry_mem(const struct ks_entry *e)
{
    return rv_usable_size(e);
}

enum ks_enc
ks_str_enc(const struct ks_entry *e)
{
    struct ent_lay l;
    if (e->flags & EF_INT) {
        return KS_ENC_INT;
    }
    if (e->flags & EF_RAW) {
        return KS_ENC_RAW;
    }
    ent_lay(e, &l);
    return l.vlen <= KS_EMBSTR_MAX ? KS_ENC_EMBSTR : KS_ENC_RAW;
}

bool
ks_str_is_int(const struct ks_entry *e)
{
    return (e->flags & (EF_TYPE | EF_INT)) == (KS_STRING | EF_INT);
}

int64_t
ks_str_int(const struct ks_entry *e)
{
    struct ent_lay l;
    ent_lay(e, &l);
    return int_get(l.val, (e->flags & EF_ISZ) >> EF_ISZ_SHIFT);
}

/* Decimal formatting (no dependency on the proto library's writer). */
static size_t
ks_fmt_int(char *out, int64_t v)
{
    char tmp[24];
    size_t n = 0, i;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    i = 0;
    if (v < 0) {
        out[i++] = '-';
    }
    while (n > 0) {
        out[i++] = tmp[--n];
    }
    return i;
}

struct rv_str
ks_str_get(const struct ks_entry *e, char scratch[24])
{
    struct ent_lay l;
    ent_lay(e, &l);
    if (e->flags & EF_INT) {
        size_t n = ks_fmt_int(scratch, int_get(l.val, (e->flags & EF_ISZ) >> EF_ISZ_SHIFT));
        return (struct rv_str){ scratch, n };
    }
    return (struct rv_str){ (const char *)l.val, l.vlen };
}

size_t
ks_str_len(const struct ks_entry *e)
{
    char tmp[24];
    return ks_str_get(e, tmp).len;
}

void *
ks_entry_ptr(const struct ks_entry *e)
{
    struct ent_lay l;
    void *p;
    ent_lay(e, &l);
    memcpy(&p, l.val, sizeof(p));
    return p;
}
bool
ks_entry_inl(const struct ks_entry *e)
{
    return (e->flags & EF_TYPE) != KS_STRING && (e->flags & EF_INL);
}

uint8_t *
ks_inl_val(const struct ks_entry *e, size_t *len)
{
    struct ent_lay l;
    ent_lay(e, &l);
    *len = l.vlen;
    return l.val;
}
