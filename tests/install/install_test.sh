#!/bin/sh
# Every component of `cmake --install` goes below --prefix, and runs from there: the daemon and
# the tools start, a C program builds and links against the installed libtaot_client, and
# Debian's python3 imports the installed module through PYTHONPATH.
# Usage: install_test.sh BUILD_DIR
set -eu
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
for component in daemon tools client python; do
  cmake --install "$build" --prefix "$prefix" --component "$component" > /dev/null
  while read -r file; do
    case "$file" in
      "$prefix"/*) ;;
      *) echo "install_test: component $component wrote $file, outside --prefix $prefix" >&2; exit 1 ;;
    esac
  done < "$build/install_manifest_$component.txt"
done
for tool in taot-planner taotctl taot taot-sim taot-simranks; do
  "$prefix/bin/$tool" --help > /dev/null || { echo "install_test: $prefix/bin/$tool --help failed" >&2; exit 1; }
done
test -f "$prefix/lib/taot/plugins/libtaot_greedy_plugin.so"
test -f "$prefix/include/taot/planner_plugin.h"
cat > "$prefix/abi.c" <<'C'
#include <stdio.h>
#include "taot/client/taot_client.h"
int main(void) { return taot_client_abi_version() == TAOT_CLIENT_ABI_VERSION ? 0 : 1; }
C
cc -I"$prefix/include" "$prefix/abi.c" -L"$prefix/lib" -ltaot_client -Wl,-rpath,"$prefix/lib" -o "$prefix/abi"
"$prefix/abi"
site="$(ls -d "$prefix"/lib/python3*/*-packages)"
PYTHONPATH="$site" /usr/bin/python3 -c "import taot, taot.torch, sys; sys.exit(0 if taot.__file__.startswith('$prefix') and taot.torch.__file__.startswith('$prefix') else 1)" \
  || { echo "install_test: python3 did not import taot from $site" >&2; exit 1; }
echo "install_test: every component below $prefix"
