// Package rtnl reads a network namespace's interfaces from one rtnetlink
// RTM_GETLINK dump: index, name, flags, operational state, MTU, carrier,
// carrier changes and the 64-bit interface statistics (IFLA_STATS64).
// Dialing the socket (Conn) is kept apart from decoding a dump message
// (ParseLink), which has no I/O and is what the table and fuzz tests
// exercise.
package rtnl
