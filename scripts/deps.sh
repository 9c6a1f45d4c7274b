#!/usr/bin/env bash
# Install what is missing from Debian 12's packages. Usage: scripts/deps.sh [build|test]
#   build: what compiling and running ruvio needs
#   test:  also the test tools (Criterion, python3-redis, pytest, redis-tools, clang for fuzzing,
#          clang-format for the format check)
set -euo pipefail
want=(build-essential cmake pkg-config libevent-dev libjemalloc-dev libprotobuf-c-dev protobuf-c-compiler
      libsystemd-dev libssl-dev libraft-dev libuv1-dev python3)   # python3: scripts/layers.py checks the layer order in the build
if [ "${1:-build}" = test ]; then
  want+=(libcriterion-dev python3 python3-redis python3-pytest python3-prometheus-client redis-tools redis-server
         clang libclang-rt-14-dev clang-format iproute2 procps util-linux redis-sentinel)
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
