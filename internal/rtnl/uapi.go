package rtnl

// Values of the Linux uapi (include/uapi/linux/rtnetlink.h, if_link.h,
// if.h) that the decoder needs. They are stable ABI; they are spelled out
// here rather than taken from golang.org/x/sys/unix so that the decoder
// and its tests build on every GOOS (unix defines them for Linux only).
// uapi_linux_test.go checks each against golang.org/x/sys/unix.
const (
	rtmNewlink = 16 // RTM_NEWLINK
	rtmGetlink = 18 // RTM_GETLINK

	sizeofIfInfomsg = 16 // sizeof(struct ifinfomsg)

	iflaAddress          = 1  // IFLA_ADDRESS
	iflaIfname           = 3  // IFLA_IFNAME
	iflaMTU              = 4  // IFLA_MTU
	iflaOperstate        = 16 // IFLA_OPERSTATE
	iflaStats64          = 23 // IFLA_STATS64
	iflaCarrier          = 33 // IFLA_CARRIER
	iflaCarrierChanges   = 35 // IFLA_CARRIER_CHANGES
	iflaCarrierUpCount   = 47 // IFLA_CARRIER_UP_COUNT
	iflaCarrierDownCount = 48 // IFLA_CARRIER_DOWN_COUNT
	iflaParentDevName    = 56 // IFLA_PARENT_DEV_NAME
	iflaParentDevBusName = 57 // IFLA_PARENT_DEV_BUS_NAME

	iffUp      = 0x1  // IFF_UP
	iffRunning = 0x40 // IFF_RUNNING
)
