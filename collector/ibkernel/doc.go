// Package ibkernel holds the real-kernel test of the infiniband collector:
// Soft-RoCE (rdma_rxe) devices in a Debian kernel booted under qemu by
// collector/testenv/guest. It is a package of its own so that its one
// guest boot does not add to the boots of other collectors' tests.
package ibkernel
