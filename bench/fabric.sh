#!/usr/bin/env bash
# Side by side on one simulated InfiniBand fabric (ibsim + OpenSM): read
# every up switch port with internal/mad (discovery by directed route plus
# the counter sweep, and the sweep alone), with perfquery per switch as
# treydock/infiniband_exporter launches it, and with ibqueryerrors as
# guilbaults/infiniband-exporter launches it; then the fabric collector's
# per-node far-end poll. Needs ibsim-utils, libumad2sim0, opensm and
# infiniband-diags (.ci/apt/fabric.txt); no root.
#
#   bench/fabric.sh                      # 100 leaves, 8 spines, 16 hosts a leaf
#   FABRIC_LEAVES=200 bench/fabric.sh    # larger (ibsim holds 256 switches, 2048 nodes)
#
# Results go to docs/benchmarks.md ("InfiniBand fabric sweep") by hand,
# with this command line.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-5x}
COUNT=${COUNT:-3}
go test -run '^$' -bench 'BenchmarkFabricSweep' -benchtime "$BENCHTIME" -count "$COUNT" -timeout 60m -v ./bench/fabricbench
