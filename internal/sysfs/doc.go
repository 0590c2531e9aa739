// Package sysfs reads the small attribute files of sysfs for the netdev
// and infiniband collectors, and holds what they need around them:
// parsers for the kernel's number and PCIe speed formats, the classification
// of the errors sysfs attributes answer with, the memory of attributes a
// driver does not support, and optional values.
//
// The collectors read sysfs through this package rather than through
// github.com/prometheus/procfs/sysfs (NetClassByIface, NetClassPCIDevice,
// InfiniBandDevice), which has readers for the same directories, because
// with procfs (v0.23.0):
//
//   - one file that answers EINVAL drops the whole RDMA device:
//     InfiniBandDevice returns an error when a port's rate answers EINVAL,
//     which the kernel does while the port has no valid active speed, and
//     when a hw_counters file does, as restricted ConnectX functions do;
//   - the PCIe link speed parser requires the value to end in "GT/s PCIe",
//     so the "8 GT/s" of kernels that print no " PCIe" suffix fails the
//     whole PCI device, and so does any other read error of a link file;
//   - errors are swallowed: the net class reader skips attributes that
//     answer ENOENT, EACCES, EOPNOTSUPP, EINVAL or ENODATA and never
//     checks whether a value parsed, and the IBA counters reader skips
//     files that answer ENOENT, EACCES, EOPNOTSUPP or EINVAL, so none of
//     these can be counted in nic_exporter_collector_source_errors_total,
//     nor remembered so the attribute is not read again (on some adapters
//     each read is a firmware command);
//   - excluded devices would still be read: NetClassByIface reads every
//     attribute of an interface and InfiniBandDevice every file of every
//     port, and the whole-class readers (NetClass, InfiniBandClass) every
//     device before a filter could apply.
package sysfs
