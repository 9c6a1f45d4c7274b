/* node/core/errs.h: Redis's exact client error strings, in one place (tests reuse them). */
#pragma once

/* clang-format off */
#define RV_CLIENT_ERRORS(X)                                                                  \
    X(SYNTAX, "ERR syntax error")                                                            \
    X(NOTINT, "ERR value is not an integer or out of range")                                 \
    X(NOTFLOAT, "ERR value is not a valid float")                                            \
    X(WRONGTYPE, "WRONGTYPE Operation against a key holding the wrong kind of value")        \
    X(OVERFLOW, "ERR increment or decrement would overflow")                                 \
    X(NANINF, "ERR increment would produce NaN or Infinity")                                 \
    X(NOSUCHKEY, "ERR no such key")                                                          \
    X(NOAUTH, "NOAUTH Authentication required.")                                             \
    X(WRONGPASS, "WRONGPASS invalid username-password pair or user is disabled.")            \
    X(NOPASS, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?") \
    X(DBINDEX, "ERR DB index is out of range")                                               \
    X(OFFSET_RANGE, "ERR offset is out of range")                                            \
    X(STRING_SIZE, "ERR string exceeds maximum allowed size (proto-max-bulk-len)")           \
    X(CROSSSLOT, "CROSSSLOT Keys in request don't hash to the same slot")                    \
    X(CLUSTER_DISABLED, "ERR This instance has cluster support disabled")                    \
    X(NX_XX_GT_LT, "ERR NX and XX, GT or LT options at the same time are not compatible")   \
    X(GT_LT_NX, "ERR GT and LT options at the same time are not compatible")                \
    X(LFU, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.") \
    X(LFU_IDLE, "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.") \
    X(OOM, "OOM command not allowed when used memory > 'maxmemory'.")                       \
    X(NO_SUBCOMMAND, "ERR unknown subcommand")                                               \
    X(TIMEOUT_NEG, "ERR timeout is negative")

enum rv_client_err {
#define RV_ERR_ENUM(name, text) RV_ERR_##name,
    RV_CLIENT_ERRORS(RV_ERR_ENUM)
#undef RV_ERR_ENUM
    RV_ERR__COUNT
    /* clang-format on */
};

extern const char *const rv_client_err_text[RV_ERR__COUNT];
