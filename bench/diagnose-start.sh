#!/usr/bin/env bash
# bench/diagnose-start.sh: what `nic_exporter diagnose` costs per run, for
# the binaries given (for example the one before and the one after a
# change). For each binary and each bundle of diagnose/testdata/bundles
# it runs `BIN diagnose BUNDLE` RUNS times (default 20), interleaving the
# binaries so that a busy machine loads them alike, and prints the
# median and the minimum wall time per run in milliseconds, and the
# median of the CPU time (user + system, GNU time's %U + %S, 10 ms
# resolution) and of the maximum resident set (%M) in MiB: on a busy
# machine the CPU time is the steadier number. Output goes
# to /dev/null; exit status 1 (findings) is expected. Used for
# docs/benchmarks.md ("diagnose rule engine").
#   bench/diagnose-start.sh /tmp/before/nic_exporter ./nic_exporter
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-20}
if [ $# -eq 0 ]; then
	echo "usage: $0 BINARY..." >&2
	exit 2
fi
WORK=$(mktemp -d /tmp/nic-diagnose-start.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

bundles=(diagnose/testdata/bundles/*/)
for ((i = 0; i < RUNS; i++)); do
	for bin in "$@"; do
		key=$(echo "$bin" | tr '/' '_')
		for b in "${bundles[@]}"; do
			name=$(basename "$b")
			start=$(date +%s%N)
			/usr/bin/time -f '%M %U %S' -o "$WORK/rss" "$bin" diagnose "$b" >/dev/null 2>&1 || true
			end=$(date +%s%N)
			echo $(((end - start) / 1000)) >>"$WORK/$key.$name.us"
			# the last line: GNU time writes "Command exited with non-zero status 1" first
			read -r kb user sys < <(tail -n 1 "$WORK/rss")
			echo "$kb" >>"$WORK/$key.$name.kb"
			echo "($user + $sys) * 1000" | bc -l >>"$WORK/$key.$name.cpu"
		done
	done
done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-28s %-14s %10s %10s %10s %10s\n' binary bundle median_ms min_ms cpu_ms rss_MiB
for bin in "$@"; do
	key=$(echo "$bin" | tr '/' '_')
	for b in "${bundles[@]}"; do
		name=$(basename "$b")
		med=$(median <"$WORK/$key.$name.us")
		min=$(sort -n "$WORK/$key.$name.us" | head -1)
		rss=$(median <"$WORK/$key.$name.kb")
		cpu=$(median <"$WORK/$key.$name.cpu")
		printf '%-28s %-14s %10.1f %10.1f %10.0f %10.1f\n' "$bin" "$name" "$(echo "$med / 1000" | bc -l)" "$(echo "$min / 1000" | bc -l)" "$cpu" "$(echo "$rss / 1024" | bc -l)"
	done
done
