#!/usr/bin/env bash
# Build and run the whole test suite: a Release build with warnings as errors
# (unit, integration and fuzz tests), then an AddressSanitizer+UBSan build that
# runs the unit and integration tests again. Every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
jobs=$(nproc)

echo "== format (scripts/format.sh --check)"
bash scripts/format.sh --check

echo "== release build (-Werror, layer order checked)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRUVIO_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
# -j: the unit tests run beside the integration suite; the tests that load the machine or take ports in bulk
# (crash, multihost, jepsen, the Node.js clients) are RUN_SERIAL (tests/CMakeLists.txt)
(cd build && ctest -j"$jobs" --output-on-failure -L 'unit|integ|jepsen' --timeout 900)

echo "== fuzz (libFuzzer, clang, bounded)"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DRUVIO_FUZZ=ON -DRUVIO_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_all
(cd build-fuzz && ctest -j"$jobs" --output-on-failure -L fuzz --timeout 300)

# The multi-host tests (label netns) ran in the release stage; under ASan they add two minutes to a suite that
# must stay under 25 on CI's two cores, and the paths they drive are also run by the integration tests here.
echo "== ASan+UBSan build"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRUVIO_WERROR=ON -DRUVIO_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest -j"$jobs" --output-on-failure -L 'unit|integ' -LE netns --timeout 1200)
echo "== all tests passed"
