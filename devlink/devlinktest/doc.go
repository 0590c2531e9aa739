// Package devlinktest is a fake devlink generic netlink family for tests.
//
// A Kernel answers the requests sent on its connections with a Func and
// frames the replies as Linux's devlink does: dump replies and diagnose
// output come as a multi-part message ending in NLMSG_DONE, read in more
// than one piece; an Errno becomes a netlink error message; a request that
// asks for an acknowledgement and gets no reply is acknowledged. Each
// connection is independent, so a Func that blocks for one request does not
// hold up requests on other connections.
//
// The fake sends no notifications: a connection to it cannot join
// multicast groups, so devlink.Client.Watch on it fails.
//
// The package is empty on systems other than Linux, which have no devlink.
package devlinktest
