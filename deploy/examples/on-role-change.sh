#!/bin/sh
# Example on_role_change hook (docs/operations.md#role-change-hook): the node that becomes the
# primary takes a virtual IP, a node that stops being the primary releases it, so clients can use
# one address. Install as /etc/ruvio/on-role-change.sh (mode 0755) and set in ruvio.conf:
#   on_role_change /etc/ruvio/on-role-change.sh
# The node must accept connections on the VIP: `bind` it too, with net.ipv4.ip_nonlocal_bind=1 so
# the node starts while another host holds it. Under systemd the hook needs CAP_NET_ADMIN
# (docs/deploy.md). Settings, from the environment or from $RUVIO_VIP_ENV (default
# /etc/ruvio/vip.env):
#   RUVIO_VIP=10.0.0.100/24   the address with its prefix length
#   RUVIO_VIP_DEV=eth0        the interface that carries it
# Arguments, from the node: old-role new-role epoch host port.
set -eu
env_file=${RUVIO_VIP_ENV:-/etc/ruvio/vip.env}
# shellcheck disable=SC1090
[ -r "$env_file" ] && . "$env_file"
old=$1 new=$2 epoch=$3 host=$4 port=$5
vip=${RUVIO_VIP:-}
dev=${RUVIO_VIP_DEV:-eth0}
if [ -z "$vip" ]; then
    echo "on-role-change: RUVIO_VIP is not set; nothing to do"
    exit 0
fi
case "$new" in
master)
    ip addr replace "$vip" dev "$dev"
    # Tell the segment at once (iputils-arping); clients' ARP caches would otherwise expire later.
    if command -v arping >/dev/null 2>&1; then
        arping -q -U -c 2 -I "$dev" "${vip%/*}" || true
    fi
    ;;
*)
    ip addr del "$vip" dev "$dev" 2>/dev/null || true
    ;;
esac
echo "on-role-change: $old -> $new (epoch $epoch, primary $host:$port): VIP $vip $( [ "$new" = master ] && echo taken || echo released ) on $dev"
