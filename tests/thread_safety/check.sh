#!/usr/bin/env bash
# check.sh CLANG INCLUDE_DIR: the compiler enforces the lock annotations of
# lemon/core/mutex.h (issue #28 §4). held_lock.cpp must compile under
# -Wthread-safety -Werror; missing_lock.cpp must fail, once for each rule it
# breaks.
set -uo pipefail
clang="$1"
include="$2"
here="$(dirname "$0")"
flags=(-std=c++20 -fsyntax-only -Wthread-safety -Werror -I "$include")
if ! "$clang" "${flags[@]}" "$here/held_lock.cpp"; then
  echo "FAIL: held_lock.cpp should compile"
  exit 1
fi
out="$("$clang" "${flags[@]}" "$here/missing_lock.cpp" 2>&1)"
if [[ $? -eq 0 ]]; then
  echo "FAIL: missing_lock.cpp compiled; the annotations check nothing"
  exit 1
fi
status=0
for expected in \
  "missing_lock.cpp:12:.*reading variable 'value_' requires holding mutex 'mu_'" \
  "missing_lock.cpp:14:.*calling function 'add_locked' requires holding mutex 'mu_'" \
  "missing_lock.cpp:19:.*reading variable 'value_' requires holding mutex 'mu_'"; do
  if ! grep -q -- "$expected" <<<"$out"; then
    echo "FAIL: no diagnostic matching: $expected"
    status=1
  fi
done
if ((status != 0)); then
  echo "$out"
else
  echo "held_lock.cpp compiles; missing_lock.cpp fails with the 3 expected diagnostics"
fi
exit "$status"
