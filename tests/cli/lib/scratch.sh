# Sourced by the CLI test scripts (tests/cli/*.sh): the rpa binary in $rpa, a
# scratch directory made current and removed on exit, and bad() to record a
# failure (the script ends with `exit $fail`). Not a test itself: the CMake
# glob takes tests/cli/*.sh only.
set -u
rpa=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() { echo "FAIL $*"; fail=1; }
