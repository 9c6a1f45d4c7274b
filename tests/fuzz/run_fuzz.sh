#!/bin/sh
# tests/fuzz/run_fuzz.sh FUZZER SEED_CORPUS WORK_DIR [SECONDS] [libFuzzer flags...]
# Runs a libFuzzer binary for SECONDS (default 60) over a fresh copy of SEED_CORPUS
# in WORK_DIR/corpus, so the committed corpus never grows. Crash inputs land in
# WORK_DIR/artifacts/. Exits non-zero when the fuzzer finds anything.
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 FUZZER SEED_CORPUS WORK_DIR [SECONDS] [libFuzzer flags...]" >&2
    exit 2
fi
bin=$1
seed=$2
work=$3
shift 3
secs=60
if [ $# -gt 0 ]; then
    secs=$1
    shift
fi
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seed"/* "$work/corpus/"
dict=
if [ -f "$here/resp.dict" ]; then
    dict="-dict=$here/resp.dict"
fi
exec "$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" $dict "$@" "$work/corpus"
