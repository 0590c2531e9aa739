#!/usr/bin/env bash
# bench/ci-load.sh: runs CI (.ci/run) on a clean clone of a revision while
# stress-ng keeps every core busy, and prints its time and the test
# summary. For the CI times in docs/benchmarks.md ("The test suite under
# load").
#
#   bench/ci-load.sh [--cold] [REV]   (REV defaults to HEAD)
#
# --cold gives the run empty Go module, build and guest kernel caches
# (GOMODCACHE, GOCACHE, NIC_EXPORTER_GUEST_CACHE in a temporary directory),
# so that modules are downloaded, Helm and the exporter built and the guest
# kernel prepared as on a fresh machine; Debian packages already
# installed stay installed (a fresh machine also pays for those: .ci/run
# prints the time of its "Debian packages" phase). Needs root like .ci/run
# and stress-ng (Debian). Leaves nothing behind but its log, whose path it
# prints.
set -euo pipefail
cd "$(dirname "$0")/.."

cold=0
if [ "${1:-}" = --cold ]; then cold=1; shift; fi
rev=$(git rev-parse "${1:-HEAD}")
command -v stress-ng >/dev/null || { echo "stress-ng is not installed (apt-get install stress-ng)" >&2; exit 1; }

work=$(mktemp -d /tmp/nic-ci-load.XXXXXX)
log=$(mktemp /tmp/nic-ci-load-log.XXXXXX)
stress=
ci=
cleanup() {
	# .ci/run runs in a session of its own: end all of it (go test,
	# qemu, Prometheus) if this script is stopped early.
	if [ -n "$ci" ]; then kill -- -"$ci" 2>/dev/null || true; wait "$ci" 2>/dev/null || true; fi
	if [ -n "$stress" ]; then kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true; fi
	chmod -R u+w "$work" 2>/dev/null || true # the module cache is read-only
	rm -rf "$work"
}
trap cleanup EXIT

git clone -q --no-hardlinks . "$work/src"
git -C "$work/src" checkout -q "$rev"
env=(CI=true)
if [ "$cold" = 1 ]; then
	env+=(GOMODCACHE="$work/gomod" GOCACHE="$work/gocache" NIC_EXPORTER_GUEST_CACHE="$work/guest")
fi
# Both cores busy for the whole run, bounded in case this script is killed.
timeout 3h stress-ng --cpu "$(nproc)" --quiet &
stress=$!
start=$SECONDS
rc=0
(cd "$work/src" && exec setsid env "${env[@]}" bash .ci/run </dev/null) >"$log" 2>&1 &
ci=$!
wait "$ci" || rc=$?
ci=
took=$((SECONDS - start))
grep -E '^=== ci:|passed, [0-9]+ failed|^UNFINISHED|^--- FAIL' "$log" || true
grep -A3 'guest kernel packages at' "$log" | head -3 || true
mode=warm
[ "$cold" = 1 ] && mode=cold
printf 'ci-load: %s %s rc=%d %dm%02ds under stress-ng --cpu %d (log %s)\n' \
	"$mode" "$(git rev-parse --short "$rev")" "$rc" $((took / 60)) $((took % 60)) "$(nproc)" "$log"
exit "$rc"
