#!/bin/sh
# run.sh FUZZER SECONDS CORPUS...: a short fuzzing run for CTest, or with SECONDS 0 each input of
# the CORPUS directories run once (the seeds and the inputs that once failed: a replay that always
# runs the same inputs). New inputs go to a temporary directory (never into the repository's
# corpus); exit 77 (a skip) when FUZZER was not built because no clang with -fsanitize=fuzzer was
# found.
set -u
fuzzer=$1 secs=$2
shift 2
if [ ! -x "$fuzzer" ]; then
    echo "SKIP: $fuzzer not built (needs clang with -fsanitize=fuzzer: scripts/bootstrap)"
    exit 77
fi
dict=$(dirname "$0")/views.dict
if [ "$secs" = 0 ]; then
    files=""
    for c in "$@"; do
        [ -d "$c" ] && files="$files $(find "$c" -type f | sort | tr '\n' ' ')"
    done
    [ -n "$files" ] || { echo "no inputs in $*"; exit 1; }
    # stdout and stderr of the views are closed (-close_fd_mask=3), the fuzzer's own report still shows
    exec "$fuzzer" -timeout=60 -rss_limit_mb=3000 -close_fd_mask=3 -error_exitcode=1 \
        -timeout_exitcode=1 $files
fi
seeds=""
for c in "$@"; do
    [ -d "$c" ] && seeds="$seeds $c"
done
out=$(mktemp -d "${TMPDIR:-/tmp}/tally-fuzz-run.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
# libFuzzer's own failure status is 77 by default, which CTest takes for a skip: a bug found must
# fail the test
"$fuzzer" -seed=1 -max_total_time="$secs" -timeout=60 -rss_limit_mb=3000 -max_len=65536 \
    -dict="$dict" -close_fd_mask=3 -artifact_prefix="$out/" -print_final_stats=1 \
    -error_exitcode=1 -timeout_exitcode=1 "$out" $seeds
rc=$?
for a in "$out"/crash-* "$out"/timeout-* "$out"/oom-* "$out"/leak-*; do
    [ -e "$a" ] && echo "input that failed: $a (kept in $(cp "$a" "${TMPDIR:-/tmp}/" && echo "${TMPDIR:-/tmp}"))"
done
exit $rc
