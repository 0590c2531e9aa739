#!/usr/bin/env bash
# Fleet-scale comparison of nic_exporter with node_exporter (make
# bench-compare). Runs on a fresh Debian machine as root, in a few minutes:
#
# 1. installs wrk, gnuplot, ethtool and iproute2 from Debian if missing, and
#    node_exporter 1.5.0 from the Debian package prometheus-node-exporter
#    (unpacked into the work directory with dpkg-deb, so no service starts);
# 2. builds nic_exporter, the host generator and the load generator;
# 3. for each host size: creates a network namespace it owns with real veth
#    devices of many queues (the ethtool source of both exporters), writes
#    a synthetic sysfs tree with the same interface names plus InfiniBand
#    devices (bench/scalehost; --path.sysfs of both exporters), starts both
#    exporters inside the namespace and measures them one at a time with
#    bench/cmd/loadgen (and wrk as a cross-check on the large host);
# 4. writes the report (RESULTS) and the plot of scrape latency against
#    series count (PLOT).
#
# node_exporter runs its netclass, infiniband and ethtool collectors;
# nic_exporter its netdev, infiniband and ethtool collectors. Both read the
# same files and the same devices.
#
# Environment: RESULTS (default docs/bench-compare.md), PLOT (default
# docs/bench-compare.png), SIZES (space-separated name:ports:queues:ibports),
# KEEP=1 keeps the work directory, NIC_EXPORTER=path uses a prebuilt binary.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR/.. source=bench/lib.sh
. bench/lib.sh
RESULTS=${RESULTS:-docs/bench-compare.md}
PLOT=${PLOT:-docs/bench-compare.png}
# name:ports:queues:ibports. A veth with Q queues has 9*Q+1 ethtool
# statistics; 560 queues give 5,041, as many as an mlx5 port with 64
# channels. "large" is the large host of the issue: 16 such ports and 16
# InfiniBand ports.
SIZES=${SIZES:-"1-port:1:560:1 4-ports:4:560:4 large:16:560:16 100k:20:560:16 1M:200:560:16"}
NS=nicbench$$
THEIRS_ADDR=127.0.0.1:9900
OURS_ADDR=127.0.0.1:9901
bench_init bench
OUT=$WORK/results.jsonl

require_root bench-compare

# 1. Tools.
install_missing wrk:wrk gnuplot:gnuplot-nox ethtool:ethtool ip:iproute2 dpkg-deb:dpkg
fetch_node_exporter
case "$NE_VERSION" in
*"version 1.5.0 "*) ;;
*) echo "want node_exporter 1.5.0, the package has: $NE_VERSION" >&2; exit 1 ;;
esac

# 2. Builds.
build_tools scalehost loadgen
LG=$WORK/loadgen

# nic_exporter's collectors: netdev, infiniband and ethtool; every other
# collector the build has is switched off, so both exporters read the same
# sources.
only_collectors netdev infiniband ethtool
OURS_FLAGS=("${NIC_COLLECTOR_FLAGS[@]}")
help=$("$NIC" --help 2>&1)
for c in infiniband ethtool; do
	if ! grep -q -- "--\[no-\]collector.$c " <<<"$help"; then
		echo "this nic_exporter build has no $c collector; the comparison would not be like for like" >&2
		exit 1
	fi
done

# lg runs the load generator inside the namespace, after a pause that
# lets the previous measurement's garbage collection finish.
lg() {
	sleep 1
	in_ns "$LG" "$@" -out "$OUT" >/dev/null
}

# ready URL waits until the load generator reads a scrape of URL.
ready() { wait_ready "$1" "$LG" series -url; }

WRK_OUT=$WORK/wrk.txt
: >"$WRK_OUT"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

for spec in $SIZES; do
	IFS=: read -r size ports queues ib <<<"$spec"
	log "host $size: $ports ports x $queues queues, $ib InfiniBand ports"
	setup_ns "$ports" "$queues" mlx
	host=$WORK/host-$size
	"$WORK/scalehost" -out "$host" -size large -netdevs "$ports" -netdev-names "$(iface_list mlx "$ports")" \
		-channels 64 -ib-ports "$ib" -ena 0 >/dev/null
	include="enp[0-9]+s0np0"
	start_in_ns "$WORK/node_exporter-$size" "$NE" --path.sysfs="$host/sys" --collector.disable-defaults \
		--collector.netclass --collector.infiniband --collector.ethtool \
		--collector.ethtool.device-include="^${include}\$" \
		--web.listen-address="$THEIRS_ADDR" --web.max-requests=64 --log.level=warn
	ne_pid=$STARTED
	start_in_ns "$WORK/nic_exporter-$size" "$NIC" --path.sysfs="$host/sys" "${OURS_FLAGS[@]}" \
		--collector.ethtool.device-include="$include" \
		--web.listen-address="$OURS_ADDR" --web.max-requests=64 --log.level=warn
	nic_pid=$STARTED
	ready "http://$THEIRS_ADDR/metrics"
	ready "http://$OURS_ADDR/readyz"
	sleep 2

	common_t=(-exporter node_exporter -size "$size" -url "http://$THEIRS_ADDR/metrics" -pid "$ne_pid")
	common_o=(-exporter nic_exporter -size "$size" -url "http://$OURS_ADDR/metrics" -pid "$nic_pid")
	n=10
	[ "$size" = 1M ] && n=3
	if [ "$size" = large ] || [ "$size" = 1M ]; then
		# Background cost without scrapes: our polls; node_exporter does
		# nothing between scrapes.
		idle=30s
		[ "$size" = 1M ] && idle=15s
		lg idle -exporter nic_exporter -size "$size" -pid "$nic_pid" -duration "$idle"
		lg idle -exporter node_exporter -size "$size" -pid "$ne_pid" -duration 5s
	fi
	lg series "${common_t[@]}"
	lg series "${common_o[@]}"
	for gz in false true; do
		lg steady "${common_t[@]}" -gzip="$gz" -rate 2 -n "$n" -max-time 40s
		lg steady "${common_o[@]}" -gzip="$gz" -rate 2 -n "$n" -max-time 40s
	done
	if [ "$size" = large ]; then
		# 50 scrapers that start together once a second, as 50 Prometheus
		# servers would; then 50 closed-loop scrapers (saturation). The
		# closed loop is not run against node_exporter: at about a second
		# of CPU per scrape the first burst saturates it already.
		lg burst "${common_t[@]}" -gzip -c 50 -rate 1 -duration 10s
		lg burst "${common_o[@]}" -gzip -c 50 -rate 1 -duration 10s
		lg concurrent "${common_o[@]}" -gzip -c 50 -duration 10s
		{
			echo "## wrk -t2 -c50 -d10s, nic_exporter, gzip (closed loop)"
			in_ns wrk -t2 -c50 -d10s --timeout 60s --latency -H 'Accept-Encoding: gzip' "http://$OURS_ADDR/metrics"
		} >>"$WRK_OUT" 2>&1
	fi
	stop_all
	rm -rf "$host"
done
ip netns del "$NS"

# 4. Report and plot.
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
log "writing $RESULTS and $PLOT"
header=$(
	cat <<EOF
Written by \`make bench-compare\` (bench/compare.sh) on $(date -u +%Y-%m-%d) at $(date -u +%H:%M) UTC.

- Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")
- nic_exporter: $(git describe --always --dirty 2>/dev/null || echo unknown), $(go version | cut -d' ' -f3); node_exporter: ${NE_VERSION#node_exporter, } (Debian package prometheus-node-exporter)
- Both exporters run at once in one network namespace and are measured one at a time; the load generator runs on the same $(nproc) CPUs. Load average (1, 5, 15 min) at the start: ${LOAD_START}; at the end: ${LOAD_END} (other work on the machine competes with both exporters alike).
- Hosts (name:ports:queues:InfiniBand ports): ${SIZES}. Each port is a real veth with that many queues (ethtool source of both) and a synthetic mlx5 netdev with PCIe link in the sysfs tree, plus one InfiniBand port per port (sysfs, counters/ and hw_counters/).
- node_exporter: \`--collector.disable-defaults --collector.netclass --collector.infiniband --collector.ethtool --collector.ethtool.device-include='^enp[0-9]+s0np0\$' --path.sysfs=HOST/sys --web.max-requests=64\`
- nic_exporter: \`--path.sysfs=HOST/sys ${OURS_FLAGS[*]} --collector.ethtool.device-include='enp[0-9]+s0np0' --web.max-requests=64\` (default 5 s poll intervals)
- steady: one scraper starting a scrape every 0.5 s (or when the previous one ends, if later), 10 scrapes (3 at 1M). burst: 50 scrapers that each start a scrape every second, all at the same instants, for 10 s (a late scraper starts its next scrape at once). concurrent: 50 closed-loop scrapers for 10 s. CPU is user+system time of the exporter process from /proc/PID/stat over the measurement, divided by the scrapes; "without background polls" subtracts our idle poll CPU rate. Latency is from sending the request to reading the last byte.
EOF
)
"$LG" report -in "$OUT" -md "$RESULTS" -dat "$WORK/plot.dat" -header "$header"
{
	echo
	echo "### wrk cross-check (large host)"
	echo
	echo '```'
	grep -E '^## |Latency|50%|75%|90%|99%|Requests/sec|Non-2xx|Socket errors|requests in' "$WRK_OUT" || true
	echo '```'
} >>"$RESULTS"
cp "$OUT" "${RESULTS%.md}.jsonl"
gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced font ",11"
set output "$PLOT"
set title "Scrape latency against series count (median, one scraper; $(nproc) CPUs)"
set xlabel "series in the scrape"
set ylabel "median scrape latency (seconds)"
set logscale xy
set format x "%.0s%c"
set grid
set key top left
plot "$WORK/plot.dat" using 5:6 with linespoints lw 2 title "node_exporter 1.5.0", \
     "$WORK/plot.dat" using 5:7 with linespoints lw 2 dt 2 title "node_exporter 1.5.0, gzip", \
     "$WORK/plot.dat" using 2:3 with linespoints lw 2 title "nic_exporter", \
     "$WORK/plot.dat" using 2:4 with linespoints lw 2 dt 2 title "nic_exporter, gzip"
EOF
log "done: $RESULTS, ${RESULTS%.md}.jsonl, $PLOT"
