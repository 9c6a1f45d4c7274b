#!/usr/bin/env bash
# Install what is missing from Debian 12's packages. Usage: scripts/deps.sh [build|test]
#   build: what compiling and running ruvio needs
#   test:  also the test tools (Criterion, python3-redis, pytest, redis-tools, clang for fuzzing,
#          clang-format for the format check, nodejs and npm for the Node.js clients), then
#          `npm ci` in tests/clients (ioredis, node-redis, BullMQ, bee-queue as pinned in its package-lock.json)
set -euo pipefail
want=(build-essential cmake pkg-config libevent-dev libjemalloc-dev libprotobuf-c-dev protobuf-c-compiler
      libsystemd-dev libssl-dev libraft-dev libuv1-dev libluajit-5.1-dev lua-cjson-dev python3)   # python3: scripts/layers.py checks the layer order in the build
if [ "${1:-build}" = test ]; then
  want+=(libcriterion-dev python3 python3-redis python3-pytest python3-pytest-xdist python3-prometheus-client redis-tools redis-server
         clang libclang-rt-14-dev clang-format iproute2 procps util-linux redis-sentinel)
  # Debian 12's nodejs (18) and npm, unless a node/npm is already there (e.g. NodeSource's, whose nodejs
  # package conflicts with Debian's npm)
  command -v node >/dev/null || want+=(nodejs)
  command -v npm >/dev/null || want+=(npm)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tests/clients: the Node.js clients of tests/integ/test_cluster_clients.py and test_node_libs.py, reinstalled
# only when package-lock.json changed (node_modules/.lock-sha256 records the one installed). Not fatal: without
# the registry those tests skip.
clients="$(cd "$(dirname "$0")/.." && pwd)/tests/clients"
if [ "${1:-build}" = test ] && command -v npm >/dev/null && [ -f "$clients/package-lock.json" ]; then
  sum=$(sha256sum "$clients/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$clients/node_modules/.lock-sha256" 2>/dev/null)" != "$sum" ]; then
    echo "deps: npm ci in tests/clients"
    if (cd "$clients" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null); then
      echo "$sum" >"$clients/node_modules/.lock-sha256"
    else
      echo "deps: npm ci in tests/clients failed; the Node.js client tests will skip" >&2
    fi
  fi
fi
