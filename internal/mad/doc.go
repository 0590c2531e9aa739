// Package mad is a small InfiniBand management datagram (MAD) client in
// pure Go: it builds and parses the Performance Management class
// (ClassPortInfo, PortCounters, PortCountersExtended, PortRcvErrorDetails,
// PortXmitDiscardDetails) and the Subnet Management class, LID-routed and
// directed-route (NodeInfo, NodeDescription, PortInfo), and sends them
// through a Transport: the kernel's /dev/infiniband/umadN for real fabrics
// (UmadTransport) or ibsim's socket protocol for simulated ones
// (SimTransport).
//
// It is written here rather than taken from a library because no Go
// library speaks MADs: the Go InfiniBand tools fork infiniband-diags
// (perfquery, ibnetdiscover) or read only the local ports from sysfs, and
// libibumad/libibmad would need cgo, which the static release binary does
// not have. The layouts follow the IBTA specification, volume 1 (sections
// named on each type), cross-checked against rdma-core's libibmad field
// tables and against perfquery and smpquery in this package's tests.
//
// Encoding and decoding are separate from I/O: the Parse functions take
// the bytes of one attribute and are fuzzed; Client does the requests.
package mad
