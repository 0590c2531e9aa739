package infiniband

import (
	"github.com/nic-exporter/nic_exporter/collector"
)

// Spec names the infiniband collector and sets the defaults of its common
// flags (collector.RegisterCommonFlags).
func Spec() collector.Spec {
	return collector.Spec{
		Name:            "infiniband",
		Help:            "RDMA device and port state, rate, IBA port counters and driver hw_counters from /sys/class/infiniband.",
		DefaultInterval: "5s",
		DefaultTimeout:  "4s",
	}
}
