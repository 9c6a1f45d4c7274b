/* base/rv_err.h: Ruvio's internal status codes. A call that can fail returns
 * RV_OK (0) or one of the negative codes below; errno never crosses a module. */
#pragma once

enum rv_err {
    RV_OK = 0,
    RV_EAGAIN = -1, /* need more input / try later */
    RV_ENOMEM = -2,
    RV_EPROTO = -3, /* malformed protocol input */
    RV_ELIMIT = -4, /* a configured limit was exceeded */
    RV_EIO = -5,
    RV_ENOSPC = -6,
    RV_ECORRUPT = -7,
    RV_ESTATE = -8, /* object is in a failed or wrong state */
    RV_EINVAL = -9, /* bad argument */
    RV_ENOTFOUND = -10,
};

const char *rv_strerror(int code);
