/* node/server/notify.h: systemd's notify protocol (deploy/ruvio.service is
 * Type=notify), through Debian's libsystemd. Without $NOTIFY_SOCKET, or with
 * `supervised no`, every call is a no-op. Main thread only. */
#pragma once
#include "node/core/config.h"

/* Enable or disable sending for the rest of the process, from the config. */
void notify_setup(const struct cfg *c);
/* Send one message of "KEY=value" lines, e.g. "READY=1\nSTATUS=...". */
void notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
