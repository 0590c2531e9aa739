// Package fabricbench holds the side-by-side benchmark of reading every
// switch port of a simulated InfiniBand fabric (ibsim with OpenSM): the
// MAD client of internal/mad against the tools the peers launch, the way
// they launch them (treydock/infiniband_exporter: perfquery -l -x -G per
// switch, one at a time by default; guilbaults/infiniband-exporter:
// ibqueryerrors with --switch and the counter options), and the fabric
// collector's per-node far-end poll. bench/fabric.sh runs it; the results
// are in docs/benchmarks.md.
package fabricbench
