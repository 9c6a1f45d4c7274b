#!/usr/bin/env bash
# Format the tracked C sources and headers with the repository's .clang-format.
# Usage: scripts/format.sh [--check] [FILE...]
#   (no option)  rewrite the files in place
#   --check      change nothing; name each file that is not formatted and exit 1 if any (for CI)
# FILEs are relative to the current directory. Without FILEs: every tracked *.c and *.h
# except the fuzz corpus (data, not code).
# The layout depends on the clang-format version; .clang-format was tuned with 14 (Debian 12's).
# Set CLANG_FORMAT to use another binary.
set -euo pipefail

cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "format: $cf not found (apt-get install clang-format)" >&2; exit 2; }
ver=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
[ "$ver" = 14 ] || echo "format: warning: $cf is version ${ver:-unknown}, .clang-format was tuned with 14" >&2

check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  cd "$(dirname "$0")/.."
  list=$(git ls-files -- '*.c' '*.h' ':!:tests/fuzz/corpus/**')
  [ -n "$list" ] || exit 0
  mapfile -t files <<<"$list"
fi

if [ $check = 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" -i --style=file
  exit 0
fi

# --dry-run -Werror: one error per unformatted file (--ferror-limit=1), with the first place.
if printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" --style=file --dry-run -Werror --ferror-limit=1; then
  exit 0
fi
echo "format: not formatted; run scripts/format.sh (or clang-format -i FILE)" >&2
exit 1
