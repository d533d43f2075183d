#!/usr/bin/env bash
# Fails when a C, C++ or CUDA file differs from what clang-format makes of it (.clang-format);
# lists the files. `scripts/check_format.sh --fix` formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
  echo "check_format: clang-format not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
# Tracked files and new ones not yet added (not ignored), as long as they exist.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.cc' '*.h' '*.cu' |
  sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ "${1:-}" = "--fix" ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$format" --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) differ from clang-format's output (fix: scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
