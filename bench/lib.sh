# shellcheck shell=bash
# bench/lib.sh: the setup that bench/compare.sh and bench/fleet.sh share,
# sourced by both after `set -euo pipefail` and `cd` to the repository
# root: the work directory and its cleanup, tools from Debian, the builds,
# node_exporter from its Debian package, and exporters started in a
# network namespace the script owns.
#
# The sourcing script sets NS (the namespace name) before it calls
# bench_init, and reads WORK, NE, NE_VERSION, NIC, STARTED and
# NIC_COLLECTOR_FLAGS, which the functions below set.
#
# bench/revs.sh does not source it: it compares Go benchmarks of two
# revisions in git worktrees and starts no exporter.

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# bench_init NAME creates the work directory WORK (/tmp/nic-NAME.XXXXXX),
# empties the list of started processes and installs the cleanup, which
# stops them, deletes the namespace NS and removes WORK unless KEEP=1.
bench_init() {
	WORK=$(mktemp -d "/tmp/nic-$1.XXXXXX")
	PIDS=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	stop_all
	ip netns del "$NS" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}

# require_root TARGET exits unless the script runs as root, which it
# needs for the namespace and the veth devices.
require_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "$1 needs root: it creates a network namespace and veth devices" >&2
		exit 1
	fi
}

# install_missing COMMAND:PACKAGE... installs from Debian the package of
# each command that is not on PATH.
install_missing() {
	local spec missing=()
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null || missing+=("${spec#*:}")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
}

# fetch_node_exporter unpacks the Debian package prometheus-node-exporter
# into WORK (apt-get download and dpkg-deb, so no service starts) and sets
# NE to its binary and NE_VERSION to the first line of its --version.
fetch_node_exporter() {
	NE=$WORK/node_exporter/usr/bin/prometheus-node-exporter
	mkdir -p "$WORK/deb" && chmod 777 "$WORK/deb"
	log "downloading the Debian package prometheus-node-exporter"
	(cd "$WORK/deb" && apt-get download -q prometheus-node-exporter >&2)
	dpkg-deb -x "$WORK"/deb/prometheus-node-exporter_*.deb "$WORK/node_exporter"
	# shellcheck disable=SC2034 # read by the sourcing script
	NE_VERSION=$("$NE" --version 2>&1 | head -1)
}

# build_tools builds nic_exporter into WORK, or uses NIC_EXPORTER when
# set, and sets NIC to it; then builds each bench/cmd/NAME given into
# WORK/NAME.
build_tools() {
	log "building"
	if [ -n "${NIC_EXPORTER:-}" ]; then
		NIC=$NIC_EXPORTER
	else
		NIC=$WORK/nic_exporter
		CGO_ENABLED=0 go build -o "$NIC" ./cmd/nic_exporter
	fi
	local t
	for t in "$@"; do go build -o "$WORK/$t" "./bench/cmd/$t"; done
}

# only_collectors NAME... sets NIC_COLLECTOR_FLAGS to the flags that
# switch off every collector of NIC but the ones named, whatever
# collectors the build has.
only_collectors() {
	local help c k keep
	help=$("$NIC" --help 2>&1)
	NIC_COLLECTOR_FLAGS=()
	while read -r c; do
		keep=0
		for k in "$@"; do [ "$c" = "$k" ] && keep=1; done
		[ "$keep" = 1 ] || NIC_COLLECTOR_FLAGS+=("--no-collector.$c")
	done < <(grep -oE -- '--\[no-\]collector\.[a-z_]+ ' <<<"$help" | sed -E 's/.*collector\.([a-z_]+) /\1/')
}

in_ns() { ip netns exec "$NS" "$@"; }

# iface PREFIX I names interface I like a ConnectX port (mlx: enp16s0np0,
# enp17s0np0, ...) or an ENA interface (ens: ens5, ens6, ...).
iface() {
	if [ "$1" = mlx ]; then echo "enp$((16 + $2))s0np0"; else echo "ens$((5 + $2))"; fi
}

# iface_list PREFIX N prints the names of interfaces 0 to N-1, comma
# separated.
iface_list() {
	local i out=""
	for ((i = 0; i < $2; i++)); do out+="${out:+,}$(iface "$1" "$i")"; done
	echo "$out"
}

# setup_ns PORTS QUEUES PREFIX creates the namespace NS afresh, with lo up
# and PORTS veth pairs of QUEUES queues, named by iface PREFIX, peers pr0,
# pr1, ...
setup_ns() {
	ip netns del "$NS" 2>/dev/null || true
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	local i name
	for ((i = 0; i < $1; i++)); do
		name=$(iface "$3" "$i")
		ip -n "$NS" link add "$name" numtxqueues "$2" numrxqueues "$2" type veth \
			peer name "pr$i" numtxqueues "$2" numrxqueues "$2"
		ip -n "$NS" link set "$name" up
		ip -n "$NS" link set "pr$i" up
	done
}

# start_in_ns NAME CMD... starts CMD in the namespace with its output in
# NAME.log and sets STARTED to its process id. ip netns exec forks, so the
# shell it runs writes its own pid and then becomes CMD.
start_in_ns() {
	local name=$1
	shift
	rm -f "$name.pid"
	# shellcheck disable=SC2016 # $$, $0 and $@ are the inner shell's
	in_ns sh -c 'echo $$ >"$0.pid"; exec "$@"' "$name" "$@" >"$name.log" 2>&1 &
	PIDS+=("$!")
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$name.pid" ] && break
		sleep 0.05
	done
	STARTED=$(cat "$name.pid")
	PIDS+=("$STARTED")
}

# stop_all stops every process started, newest first (a Prometheus agent
# before the receiver it writes to), and kills what has not exited 15 s
# after SIGTERM: a Prometheus agent can hang in shutdown while it flushes.
stop_all() {
	local i p n
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do
		for ((n = 0; n < 150; n++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}

# wait_ready URL PROBE... runs PROBE URL in the namespace until it
# succeeds, for at most two minutes.
wait_ready() {
	local url=$1 i
	shift
	for ((i = 0; i < 600; i++)); do
		if in_ns "$@" "$url" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	echo "no answer from $url" >&2
	return 1
}
