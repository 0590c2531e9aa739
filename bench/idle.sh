#!/usr/bin/env bash
# bench/idle.sh REV... : the idle cost of nic_exporter revisions on the
# large host, measured in one sitting (make bench-idle REVS="A B").
#
# What the exporter costs a node when nobody scrapes it: its background
# polls. The script builds each revision (a temporary git worktree each),
# creates the large host of bench/compare.sh once (a network namespace it
# owns with 16 real veth ports of 560 queues, the ethtool source, and a
# synthetic sysfs tree of the same interfaces plus 16 InfiniBand ports,
# bench/scalehost), then for ROUNDS rounds starts each revision in turn
# with every default collector on and its default 5 s poll intervals,
# lets it settle for WARMUP seconds and reads its CPU time (user and
# system, /proc/PID/stat) over SECONDS seconds without a scrape.
#
# User time is the exporter's own code (parsing, rendering, garbage
# collection); system time is the kernel's work for its reads (ethtool
# ioctls, sysfs files). Both are printed, per revision and round, as
# milliseconds per 5 s poll round and as the share of one core.
#
# With PROFILE=1 the last round runs each revision under `perf record`
# (Debian linux-perf) and prints its top functions by CPU samples, user
# and kernel, after the table: where the idle time goes.
#
# Environment: ROUNDS (default 3), SECONDS_IDLE (default 30), WARMUP
# (default 12), PROFILE=1, FLAGS (more exporter flags, for example
# --no-collector.phy to see one collector's share), KEEP=1 keeps the work
# directory.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR/.. source=bench/lib.sh
. bench/lib.sh
[ $# -ge 1 ] || { echo "usage: bench/idle.sh REV..." >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
SECONDS_IDLE=${SECONDS_IDLE:-30}
WARMUP=${WARMUP:-12}
NS=nicidle$$
ADDR=127.0.0.1:9911
bench_init idle
require_root bench-idle
install_missing ethtool:ethtool ip:iproute2 curl:curl
[ "${PROFILE:-0}" = 1 ] && install_missing perf:linux-perf

top=$(git rev-parse --show-toplevel)
revs=("$@")
bins=()
for rev in "${revs[@]}"; do
	sha=$(git rev-parse --short "$rev^{commit}")
	wt=$WORK/src-$sha
	git -C "$top" worktree add -q --detach "$wt" "$sha"
	log "building $rev ($sha)"
	(cd "$wt" && CGO_ENABLED=0 go build -o "$WORK/nic_exporter-$sha" ./cmd/nic_exporter)
	git -C "$top" worktree remove --force "$wt"
	bins+=("$WORK/nic_exporter-$sha")
done
go build -o "$WORK/scalehost" ./bench/cmd/scalehost

ports=16 queues=560 ib=16
setup_ns "$ports" "$queues" mlx
host=$WORK/host
"$WORK/scalehost" -out "$host" -size large -netdevs "$ports" -netdev-names "$(iface_list mlx "$ports")" \
	-channels 64 -ib-ports "$ib" -ena 0 >/dev/null
hz=$(getconf CLK_TCK)

# cpu PID prints the process's user and system time in clock ticks.
cpu() { awk '{print $14, $15}' "/proc/$1/stat"; }

echo "Idle cost on the large host ($ports veth ports x $queues queues, $ib InfiniBand ports), $(date -u '+%Y-%m-%d %H:%M UTC'), load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| Revision | Round | user ms per 5 s round | system ms per 5 s round | total | share of one core |"
echo "|---|---|---|---|---|---|"
for ((round = 1; round <= ROUNDS; round++)); do
	for i in "${!bins[@]}"; do
		bin=${bins[i]}
		# shellcheck disable=SC2086 # FLAGS is a list of flags
		start_in_ns "$WORK/run" "$bin" --path.sysfs="$host/sys" --web.listen-address="$ADDR" --log.level=warn ${FLAGS:-}
		pid=$STARTED
		wait_ready "http://$ADDR/readyz" curl -fsS
		sleep "$WARMUP"
		read -r u0 s0 < <(cpu "$pid")
		if [ "${PROFILE:-0}" = 1 ] && [ "$round" = "$ROUNDS" ]; then
			perf record -q -F 2999 -g -p "$pid" -o "$WORK/perf-$i.data" -- sleep "$SECONDS_IDLE" 2>/dev/null
		else
			sleep "$SECONDS_IDLE"
		fi
		read -r u1 s1 < <(cpu "$pid")
		stop_all
		awk -v rev="${revs[i]}" -v round="$round" -v du=$((u1 - u0)) -v ds=$((s1 - s0)) -v hz="$hz" -v secs="$SECONDS_IDLE" 'BEGIN {
			per = 5 / secs * 1000 / hz
			printf "| %s | %d | %.1f | %.1f | %.1f | %.2f%% |\n", rev, round, du * per, ds * per, (du + ds) * per, (du + ds) / hz / secs * 100
		}'
	done
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${PROFILE:-0}" = 1 ]; then
	for i in "${!bins[@]}"; do
		echo
		echo "Where ${revs[i]} spends its idle time (perf, round $ROUNDS; share of all samples including callees; our functions and the garbage collector):"
		echo
		echo '```'
		perf report -q -i "$WORK/perf-$i.data" --children --sort symbol -g none --percent-limit 2 2>/dev/null |
			grep -E 'nic_exporter/|gcBgMarkWorker|mallocgc|bgsweep|scavenge' | sed -E 's/ +$//' | sed -n 1,25p
		echo '```'
	done
fi
