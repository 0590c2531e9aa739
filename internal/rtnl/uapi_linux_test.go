package rtnl

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestUAPIConstants checks the uapi values spelled out in uapi.go against
// golang.org/x/sys/unix, which generates them from the kernel headers.
func TestUAPIConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		ours, sys int
	}{
		{"RTM_NEWLINK", rtmNewlink, unix.RTM_NEWLINK},
		{"RTM_GETLINK", rtmGetlink, unix.RTM_GETLINK},
		{"SizeofIfInfomsg", sizeofIfInfomsg, unix.SizeofIfInfomsg},
		{"IFLA_ADDRESS", iflaAddress, unix.IFLA_ADDRESS},
		{"IFLA_IFNAME", iflaIfname, unix.IFLA_IFNAME},
		{"IFLA_MTU", iflaMTU, unix.IFLA_MTU},
		{"IFLA_OPERSTATE", iflaOperstate, unix.IFLA_OPERSTATE},
		{"IFLA_STATS64", iflaStats64, unix.IFLA_STATS64},
		{"IFLA_CARRIER", iflaCarrier, unix.IFLA_CARRIER},
		{"IFLA_CARRIER_CHANGES", iflaCarrierChanges, unix.IFLA_CARRIER_CHANGES},
		{"IFLA_CARRIER_UP_COUNT", iflaCarrierUpCount, unix.IFLA_CARRIER_UP_COUNT},
		{"IFLA_CARRIER_DOWN_COUNT", iflaCarrierDownCount, unix.IFLA_CARRIER_DOWN_COUNT},
		{"IFLA_PARENT_DEV_NAME", iflaParentDevName, unix.IFLA_PARENT_DEV_NAME},
		{"IFLA_PARENT_DEV_BUS_NAME", iflaParentDevBusName, unix.IFLA_PARENT_DEV_BUS_NAME},
		{"IFF_UP", iffUp, unix.IFF_UP},
		{"IFF_RUNNING", iffRunning, unix.IFF_RUNNING},
	} {
		if c.ours != c.sys {
			t.Errorf("%s = %d here, %d in golang.org/x/sys/unix", c.name, c.ours, c.sys)
		}
	}
}
