#!/usr/bin/env bash
# The protocol processors as the preload library links them (weft_protocols_preload's
# objects in a module linked with the C library alone, src/capture/protocols) need nothing
# from the C++ runtime: the module needs libc alone and imports no C++ symbol.
#
#   tests/capture/check_protocols_preload.sh MODULE.so
set -euo pipefail
module=$1
needed=$(readelf -d "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  case $lib in
    libc.so.*|ld-linux*) ;;
    *) echo "$module needs $lib" >&2; exit 1 ;;
  esac
done
# C++ symbols are mangled (_Z...); the runtime's C entry points start with __cxa_ or
# __gxx_ (but __cxa_finalize and __cxa_atexit are the C library's).
bad=$(nm -D --undefined-only "$module" | awk '{print $NF}' |
  grep -E '^_Z|GLIBCXX|CXXABI|^__gxx_|^__cxa_' | grep -vE '^__cxa_(finalize|atexit)@' || true)
if [[ -n $bad ]]; then
  echo "$module imports C++ runtime symbols:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "ok: $module needs [$needed] and no C++ runtime symbol"
