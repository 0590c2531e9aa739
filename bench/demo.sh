#!/usr/bin/env bash
# bench/demo.sh: what the demo host (--demo) costs as a process. Builds the
# exporter, starts it on ADDR (default 127.0.0.1:19931), waits for /readyz, scrapes
# /metrics SCRAPES times (default 10) INTERVAL seconds apart (default 2.3),
# then prints the series count, the resident set (VmRSS, VmHWM) from
# /proc/<pid>/status and the CPU time (utime + stime) from /proc/<pid>/stat,
# startup and the demo's own simulation included. Leaves nothing behind.
# Used for the demo numbers in deploy/README.md ("Resources") and
# docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

SCRAPES=${SCRAPES:-10}
INTERVAL=${INTERVAL:-2.3}
WORK=$(mktemp -d /tmp/nic-demo.XXXXXX)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/nic_exporter" ./cmd/nic_exporter
ADDR=${ADDR:-127.0.0.1:19931}
if curl -s -o /dev/null "http://$ADDR/"; then
	echo "something already listens on $ADDR; set ADDR" >&2
	exit 1
fi
"$WORK/nic_exporter" --demo --web.listen-address="$ADDR" --log.level=warn &
PID=$!
for _ in $(seq 1 100); do
	curl -sf "http://$ADDR/readyz" >/dev/null && break
	sleep 0.2
done
curl -sf "http://$ADDR/readyz" >/dev/null
for _ in $(seq 1 "$SCRAPES"); do
	curl -sf "http://$ADDR/metrics" >"$WORK/metrics.txt"
	sleep "$INTERVAL"
done
ticks=$(getconf CLK_TCK)
read -r utime stime < <(awk '{print $14, $15}' "/proc/$PID/stat")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$PID/status")
series=$(grep -c '^nic_' "$WORK/metrics.txt")
detail=$(curl -sf "http://$ADDR/metrics/detail" | grep -c '^nic_')
printf 'scrapes %d, %s s apart\n' "$SCRAPES" "$INTERVAL"
printf 'series  %d at /metrics, %d at /metrics/detail\n' "$series" "$detail"
awk -v r="$rss" -v h="$hwm" -v u="$utime" -v s="$stime" -v t="$ticks" 'BEGIN {
	printf "rss     %.1f MiB (peak %.1f MiB)\n", r / 1024, h / 1024
	printf "cpu     %.2f s\n", (u + s) / t
}'
