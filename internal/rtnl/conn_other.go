//go:build !linux

package rtnl

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrNotNamespace says a path given as a network namespace is not a
// namespace file (nsfs).
var ErrNotNamespace = errors.New("not a network namespace file")

// Conn is an rtnetlink socket; rtnetlink exists on Linux only, so on
// other systems Dial always fails and no Conn is ever made.
type Conn struct{}

// Dial fails: rtnetlink exists on Linux only.
func Dial(netns string) (*Conn, error) {
	return nil, fmt.Errorf("opening the rtnetlink socket: not supported on %s", runtime.GOOS)
}

// Close does nothing.
func (c *Conn) Close() error { return nil }

// Links fails: rtnetlink exists on Linux only.
func (c *Conn) Links() ([]Link, error) {
	return nil, fmt.Errorf("RTM_GETLINK dump: not supported on %s", runtime.GOOS)
}

// Iface names one interface: its index and name.
type Iface struct {
	Index int
	Name  string
}

// Watcher answers which interfaces a network namespace has; rtnetlink
// exists on Linux only, so on other systems there is none.
type Watcher struct{}

// NewWatcher fails: rtnetlink exists on Linux only.
func NewWatcher(string) (*Watcher, error) { return nil, errors.ErrUnsupported }

// Close does nothing.
func (*Watcher) Close() error { return nil }

// Interfaces fails: rtnetlink exists on Linux only.
func (*Watcher) Interfaces() ([]Iface, error) { return nil, errors.ErrUnsupported }

// Dumps returns 0.
func (*Watcher) Dumps() uint64 { return 0 }
