package ethtoolioctl

import "github.com/nic-exporter/nic_exporter/internal/netns"

// ErrNotNamespace says the file given as a network namespace is not one
// (see internal/netns).
var ErrNotNamespace = netns.ErrNotNamespace
