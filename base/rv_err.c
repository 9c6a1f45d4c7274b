/* base/rv_err.c */
#include "base/rv_err.h"

const char *
rv_strerror(int code)
{
    switch (code) {
    case RV_OK: return "ok";
    case RV_EAGAIN: return "try again";
    case RV_ENOMEM: return "out of memory";
    case RV_EPROTO: return "protocol error";
    case RV_ELIMIT: return "limit exceeded";
    case RV_EIO: return "I/O error";
    case RV_ENOSPC: return "no space left";
    case RV_ECORRUPT: return "corrupt data";
    case RV_ESTATE: return "bad state";
    case RV_EINVAL: return "invalid argument";
    case RV_ENOTFOUND: return "not found";
    }
    return "unknown error";
}
