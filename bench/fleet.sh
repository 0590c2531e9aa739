#!/usr/bin/env bash
# Fleet cost of the exporters on the Prometheus side (make bench-fleet).
# Runs as root on a Debian machine with the packages of .ci/apt, in about
# DURATION seconds plus two minutes:
#
# 1. builds nic_exporter and the host generator (bench/cmd/scalehost), and
#    unpacks node_exporter from the Debian package prometheus-node-exporter
#    (apt-get download + dpkg-deb, so no service starts);
# 2. for each host (HOSTS): creates a network namespace it owns with real
#    veth devices (the ethtool source) and a synthetic sysfs tree with the
#    same interface names plus InfiniBand devices, starts both exporters in
#    it and counts the series per host of node_exporter (netclass,
#    infiniband, ethtool), nic_exporter's default profile (/metrics) and
#    its detail profile (/metrics/detail);
# 3. on the large host: starts, in the same namespace (all traffic on its
#    127.0.0.1), a Prometheus server that scrapes nic_exporter's /metrics
#    as TARGETS targets at 15 s, a Prometheus agent that scrapes the same
#    targets and remote-writes them to a third Prometheus with the
#    remote-write receiver, waits DURATION seconds and reads their own
#    metrics at the start (after one minute of warm-up) and at the end:
#    head series, samples appended per second, RSS, bytes on disk, and
#    remote-write bytes sent;
# 4. writes the report (RESULTS, appended to docs/benchmarks.md by hand)
#    and the plot of series per host (PLOT).
#
# One exporter process is scraped as TARGETS targets that differ by a host
# label. For Prometheus that is the same as TARGETS hosts of the same size:
# each target is its own set of series, scraped, appended, compressed and
# written on its own; only the exporters' CPU is not multiplied, which this
# benchmark does not measure (bench-compare does). Every target has the
# same values at the same time, which compresses no better than different
# hosts: Prometheus compresses each series against its own past, never
# across series.
#
# Environment: RESULTS (default docs/fleet-cost.md), PLOT (default
# docs/fleet-cost.png), DURATION (seconds, default 660), TARGETS (default
# 20), KEEP=1 keeps the work directory, NIC_EXPORTER=path uses a prebuilt
# binary.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR/.. source=bench/lib.sh
. bench/lib.sh
RESULTS=${RESULTS:-docs/fleet-cost.md}
PLOT=${PLOT:-docs/fleet-cost.png}
DURATION=${DURATION:-660}
TARGETS=${TARGETS:-20}
WARMUP=60
# name:ports:queues:ibports:names. A veth with Q queues has 9*Q+1 ethtool
# statistics; 560 queues give 5,041, as many as an mlx5 port with 64
# channels: "large" is 16 ConnectX ports of 64 channels and 16 InfiniBand
# ports. "ena" is a typical EC2 host: two ENA interfaces with 8 queues.
HOSTS=${HOSTS:-"large:16:560:16:mlx ena:2:8:0:ens"}
NS=nicfleet$$
NE_ADDR=127.0.0.1:9900
NIC_ADDR=127.0.0.1:9901
PROM_ADDR=127.0.0.1:9090
AGENT_ADDR=127.0.0.1:9091
RECV_ADDR=127.0.0.1:9092
bench_init fleet

require_root bench-fleet
install_missing prometheus:prometheus gnuplot:gnuplot-nox curl:curl ip:iproute2 dpkg-deb:dpkg

# 1. Builds and node_exporter.
fetch_node_exporter
PROM_VERSION=$(prometheus --version 2>&1 | head -1)
build_tools scalehost

# nic_exporter runs its netdev, infiniband and ethtool collectors, like
# node_exporter its netclass, infiniband and ethtool collectors.
only_collectors netdev infiniband ethtool
NIC_FLAGS=("${NIC_COLLECTOR_FLAGS[@]}")

ready() { wait_ready "$1" curl -fsS -o /dev/null; }

# series URL counts the sample lines of a scrape.
series() { in_ns curl -fsS "$1" | grep -vc '^#'; }

# metric URL NAME prints the sum of the samples of NAME in a scrape.
metric() {
	in_ns curl -fsS "$1" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}

SERIES=$WORK/series.dat
: >"$SERIES"
for spec in $HOSTS; do
	IFS=: read -r host ports queues ib prefix <<<"$spec"
	log "host $host: $ports ports x $queues queues, $ib InfiniBand ports"
	setup_ns "$ports" "$queues" "$prefix"
	names=$(iface_list "$prefix" "$ports")
	"$WORK/scalehost" -out "$WORK/host-$host" -size large -netdevs "$ports" -netdev-names "$names" \
		-channels 64 -ib-ports "$ib" -ena 0 >/dev/null
	include="$(iface "$prefix" 0 | sed -E 's/[0-9]+/[0-9]+/g')"
	start_in_ns "$WORK/node_exporter-$host" "$NE" --path.sysfs="$WORK/host-$host/sys" --collector.disable-defaults \
		--collector.netclass --collector.infiniband --collector.ethtool \
		--collector.ethtool.device-include="^${include}\$" \
		--web.listen-address="$NE_ADDR" --log.level=warn
	start_in_ns "$WORK/nic_exporter-$host" "$NIC" --path.sysfs="$WORK/host-$host/sys" "${NIC_FLAGS[@]}" \
		--collector.ethtool.device-include="$include" --web.listen-address="$NIC_ADDR" --log.level=warn
	ready "http://$NE_ADDR/metrics"
	ready "http://$NIC_ADDR/readyz"
	sleep 6 # one poll of every collector at its 5 s interval
	ne=$(series "http://$NE_ADDR/metrics")
	def=$(series "http://$NIC_ADDR/metrics")
	det=$(series "http://$NIC_ADDR/metrics/detail")
	printf '%s %s %s %s\n' "$host" "$ne" "$def" "$det" >>"$SERIES"
	log "host $host: node_exporter $ne, nic_exporter default $def, detail $det series"
	if [ "$host" != large ]; then
		stop_all
		continue
	fi

	# 3. Prometheus on the large host.
	targets=""
	for ((i = 0; i < TARGETS; i++)); do
		targets+="      - targets: ['$NIC_ADDR']
        labels: {host: 'host$i'}
"
	done
	cat >"$WORK/prometheus.yml" <<EOF
global: {scrape_interval: 15s, scrape_timeout: 10s}
scrape_configs:
  - job_name: nic_exporter
    static_configs:
$targets
EOF
	cat >"$WORK/agent.yml" <<EOF
global: {scrape_interval: 15s, scrape_timeout: 10s}
scrape_configs:
  - job_name: nic_exporter
    static_configs:
$targets
remote_write:
  - url: http://$RECV_ADDR/api/v1/write
EOF
	printf 'global: {scrape_interval: 15s}\n' >"$WORK/receiver.yml"
	start_in_ns "$WORK/prom" prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
		--web.listen-address="$PROM_ADDR" --log.level=warn
	start_in_ns "$WORK/recv" prometheus --config.file="$WORK/receiver.yml" --storage.tsdb.path="$WORK/recv-data" \
		--web.listen-address="$RECV_ADDR" --web.enable-remote-write-receiver --log.level=warn
	start_in_ns "$WORK/agent" prometheus --enable-feature=agent --config.file="$WORK/agent.yml" \
		--storage.agent.path="$WORK/agent-data" --web.listen-address="$AGENT_ADDR" --log.level=warn
	ready "http://$PROM_ADDR/-/ready"
	ready "http://$AGENT_ADDR/-/ready"
	ready "http://$RECV_ADDR/-/ready"
	log "Prometheus, agent and receiver up; warming up for $WARMUP s"
	sleep "$WARMUP"
	t0=$(date +%s)
	app0=$(metric "http://$PROM_ADDR/metrics" prometheus_tsdb_head_samples_appended_total)
	disk0=$(du -sb "$WORK/prom-data" | cut -f1)
	sent0=$(metric "http://$AGENT_ADDR/metrics" prometheus_remote_storage_bytes_total)
	log "measuring for $((DURATION - WARMUP)) s"
	sleep "$((DURATION - WARMUP))"
	t1=$(date +%s)
	app1=$(metric "http://$PROM_ADDR/metrics" prometheus_tsdb_head_samples_appended_total)
	disk1=$(du -sb "$WORK/prom-data" | cut -f1)
	sent1=$(metric "http://$AGENT_ADDR/metrics" prometheus_remote_storage_bytes_total)
	head=$(metric "http://$PROM_ADDR/metrics" prometheus_tsdb_head_series)
	rss=$(metric "http://$PROM_ADDR/metrics" process_resident_memory_bytes)
	recv_head=$(metric "http://$RECV_ADDR/metrics" prometheus_tsdb_head_series)
	failed=$(metric "http://$AGENT_ADDR/metrics" prometheus_remote_storage_samples_failed_total)
	up=$(in_ns curl -fsS "http://$PROM_ADDR/api/v1/query?query=count(up==1)" | sed -E 's/.*"value":\[[^,]*,"([0-9]+)".*/\1/')
	stop_all
done

# 4. Report.
dt=$((t1 - t0))
awk -v dt="$dt" -v n="$TARGETS" -v app0="$app0" -v app1="$app1" -v disk0="$disk0" -v disk1="$disk1" \
	-v sent0="$sent0" -v sent1="$sent1" -v head="$head" -v rss="$rss" -v recv="$recv_head" -v up="$up" \
	-v failed="$failed" -v ne="$NE_VERSION" -v prom="$PROM_VERSION" -v series="$SERIES" -v cpus="$(nproc)" '
function human(b) {
	if (b >= 1e12) return sprintf("%.1f TB", b / 1e12)
	if (b >= 1e9) return sprintf("%.1f GB", b / 1e9)
	if (b >= 1e6) return sprintf("%.1f MB", b / 1e6)
	return sprintf("%.0f kB", b / 1e3)
}
function num(x,    s, neg) {
	s = sprintf("%.0f", x)
	while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s)
	return s
}
BEGIN {
	while ((getline line < series) > 0) {
		split(line, f, " ")
		host[++h] = f[1]; nes[h] = f[2]; def[h] = f[3]; det[h] = f[4]
	}
	print "### Series per host"
	print ""
	print "| Host | node_exporter (netclass, infiniband, ethtool) | nic_exporter default (`/metrics`) | nic_exporter detail (`/metrics/detail`) | node_exporter / nic default |"
	print "|---|---:|---:|---:|---:|"
	for (i = 1; i <= h; i++)
		printf "| %s | %s | %s | %s | %.1fx |\n", host[i], num(nes[i]), num(def[i]), num(det[i]), nes[i] / def[i]
	print ""
	rate = (app1 - app0) / dt
	perhost_day = (disk1 - disk0) / dt / n * 86400
	perhost_hour_rw = (sent1 - sent0) / dt / n * 3600
	print "### Prometheus scraping the large host'"'"'s default profile"
	print ""
	printf "%d targets of the large host (%s series each) at 15 s, %d s measured after %d s of warm-up; %s; %d CPUs shared with other work.\n\n", n, num(def[1]), dt, 60, prom, cpus
	print "| Measure | Measured | Per host | 1,000 hosts | 10,000 hosts |"
	print "|---|---:|---:|---:|---:|"
	printf "| TSDB head series | %s | %s | %s | %s |\n", num(head), num(head / n), num(head / n * 1000), num(head / n * 10000)
	printf "| Samples appended per second | %s | %.1f | %s | %s |\n", num(rate), rate / n, num(rate / n * 1000), num(rate / n * 10000)
	printf "| Prometheus RSS | %s | %s | - | - |\n", human(rss), human(rss / n)
	printf "| Bytes on disk per day (WAL and head chunks growth) | %s | %s | %s | %s |\n", human(perhost_day * n), human(perhost_day), human(perhost_day * 1000), human(perhost_day * 10000)
	printf "| Bytes on disk per sample (WAL) | %.2f | | | |\n", (disk1 - disk0) / (app1 - app0)
	printf "| Remote write, bytes sent per hour (agent) | %s | %s | %s | %s |\n", human(perhost_hour_rw * n), human(perhost_hour_rw), human(perhost_hour_rw * 1000), human(perhost_hour_rw * 10000)
	print ""
	printf "Targets up: %s of %d. Receiver head series: %s. Remote-write samples failed: %s.\n", up, n, num(recv), failed
	printf "RSS per host is the server'"'"'s RSS divided by the targets, an upper bound: it includes the fixed cost of an idle Prometheus. Disk is the growth of the data directory (WAL, compressed) in the measured window, before the first 2-hour block is compacted; compacted blocks take less.\n"
}' >"$RESULTS"
cat "$RESULTS" >&2

gnuplot <<EOF
set terminal pngcairo size 900,520 noenhanced font ",11"
set output "$PLOT"
set title "Series per host (log scale)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [10:*]
set ylabel "series"
set key top right
set grid ytics
plot "$SERIES" using 2:xtic(1) title "node_exporter (netclass, infiniband, ethtool)", \
	'' using 3 title "nic_exporter default (/metrics)", \
	'' using 4 title "nic_exporter detail (/metrics/detail)"
EOF
log "wrote $RESULTS and $PLOT"
