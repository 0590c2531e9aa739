// Package captest measures which privileges each collector of
// nic_exporter needs, on a real kernel: its only test boots Debian's
// kernel under qemu (internal/testenv/guest) with netdevsim, Soft-RoCE, a
// veth pair, a network namespace, a kernel log line, a VMA application of
// another user and a log file only root can read, and runs the built
// nic_exporter as uid 65534 with no capability, with each capability of
// the README's table alone, and with all of them, checking which
// collectors export their series in each case. The table in the README
// ("Required privileges"), docs/security.md and the Kubernetes manifests
// follow from it.
package captest
