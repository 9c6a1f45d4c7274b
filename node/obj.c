/* node/obj.c: the type table. */
#include "node/obj.h"

extern const struct obj_ops obj_list_ops;
extern const struct obj_ops obj_set_ops;
extern const struct obj_ops obj_zset_ops;
extern const struct obj_ops obj_hash_ops;
extern const struct obj_ops obj_coord_ops;

const struct obj_ops *
obj_ops_of(enum ks_type t)
{
    switch (t) {
    case KS_LIST: return &obj_list_ops;
    case KS_SET: return &obj_set_ops;
    case KS_ZSET: return &obj_zset_ops;
    case KS_HASH: return &obj_hash_ops;
    case KS_COORD: return &obj_coord_ops;
    case KS_STRING:
    case KS_STREAM: break;
    }
    return NULL;
}

const char *
obj_type_name(enum ks_type t)
{
    switch (t) {
    case KS_STRING: return "string";
    case KS_LIST: return "list";
    case KS_SET: return "set";
    case KS_ZSET: return "zset";
    case KS_HASH: return "hash";
    case KS_STREAM: return "stream";
    case KS_COORD: return "coord";
    }
    return "none";
}
