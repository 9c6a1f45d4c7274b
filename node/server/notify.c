/* node/server/notify.c: see notify.h. */
#include "node/server/notify.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>

static bool notify_on; /* set once at start-up, before any shard runs */

void
notify_setup(const struct cfg *c)
{
    notify_on = c->node.supervised == CFG_SUP_SYSTEMD || c->node.supervised == CFG_SUP_AUTO;
}

void
notify_send(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (!notify_on) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    (void)sd_notify(0, msg); /* 0 without $NOTIFY_SOCKET; failures are not the node's concern */
}
