/* base/netaddr.h: socket addresses as text. */
#pragma once
#include <stddef.h>

struct sockaddr_storage;

/* "host:port" of an IPv4/IPv6 socket address into out ("?:0" for another
 * family), and the host alone into ip when ip is not NULL (CLIENT LIST addr=,
 * INFO replication's slaveN:ip=). */
void netaddr_format(const struct sockaddr_storage *ss, char *out, size_t outsz, char *ip,
                    size_t ipsz);
