/* node/types/obj.c: the type table. */
#include "node/types/obj.h"

#include "node/types/coord.h"
#include "node/types/hash.h"
#include "node/types/json.h"
#include "node/types/list.h"
#include "node/types/set.h"
#include "node/types/stream.h"
#include "node/types/zset_enc.h"


const struct obj_ops *
obj_ops_of(enum ks_type t)
{
    switch (t) {
    case KS_LIST: return &obj_list_ops;
    case KS_SET: return &obj_set_ops;
    case KS_ZSET: return &obj_zset_ops;
    case KS_HASH: return &obj_hash_ops;
    case KS_COORD: return &obj_coord_ops;
    case KS_STREAM: return &obj_stream_ops;
    case KS_JSON: return &obj_json_ops;
    case KS_STRING: break;
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
    case KS_JSON: return "ReJSON-RL";
    }
    return "none";
}
