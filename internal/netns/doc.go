// Package netns opens network namespace files safely and runs code inside
// a namespace. The ethtool ioctl source, the ethtool netlink client and
// the rtnetlink dump all take a namespace path from the operator
// (/run/netns/NAME, /proc/PID/ns/net); this package is the one place
// that refuses what is not a namespace without blocking on it. Linux
// only.
package netns
