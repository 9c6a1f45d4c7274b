#!/usr/bin/env bash
# Format the tracked C sources and headers with the repository's .clang-format.
# Usage: scripts/format.sh [--check] [FILE...]
#   (no option)  rewrite the files in place
#   --check      change nothing; list the files that are not formatted and exit 1 if any (for CI)
# Without FILEs: every tracked *.c and *.h except the fuzz corpus (data, not code).
# The layout depends on the clang-format version; .clang-format was tuned with 14 (Debian 12's).
# Set CLANG_FORMAT to use another binary.
set -euo pipefail
cd "$(dirname "$0")/.."

cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "format: $cf not found (apt-get install clang-format)" >&2; exit 2; }
ver=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
[ "$ver" = 14 ] || echo "format: warning: $cf is version ${ver:-unknown}, .clang-format was tuned with 14" >&2

check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- '*.c' '*.h' ':!:tests/fuzz/corpus/**')
fi
[ ${#files[@]} -gt 0 ] || exit 0

if [ $check = 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" -i --style=file
  exit 0
fi

bad=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    echo "not formatted: $f" >&2
    bad=1
  fi
done
[ $bad = 0 ] || echo "format: run scripts/format.sh to fix (or clang-format -i FILE)" >&2
exit $bad
