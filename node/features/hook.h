/* node/features/hook.h: operator hooks run on node events (`on_role_change`).
 *
 * hook_role_change() may be called from any thread, a shard's included: it
 * copies its arguments into a queue and returns at once. One background
 * thread runs the queued hooks one after another, in call order, each as
 * `<on_role_change> old_role new_role epoch host port` with a time limit
 * (`on_role_change_timeout` seconds, then SIGKILL), and logs how each ended.
 * Nothing is run when `on_role_change` is empty. */
#pragma once
#include <stdint.h>

struct node;

/* Remember the node whose published config names the executable; call once
 * before any shard starts. */
void hook_setup(struct node *n);
/* Queue one run (dropped with a warning when 64 are already waiting). */
void hook_role_change(const char *old_role, const char *new_role, uint64_t epoch, const char *host,
                      int port);
/* Hooks queued or running (tests, DEBUG); 0 when idle. */
unsigned hook_pending(void);
