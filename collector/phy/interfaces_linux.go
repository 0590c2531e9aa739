package phy

import "github.com/nic-exporter/nic_exporter/internal/rtnl"

// ifaceLister lists the interfaces of one network namespace with a link
// dump made again only after a link changed (rtnl.Watcher): a dump makes
// the kernel compute every interface's statistics, which this collector
// does not read.
type ifaceLister struct {
	w *rtnl.Watcher
}

// newIfaceLister opens a lister of the namespace at path (the current one
// if empty).
func newIfaceLister(path string) (*ifaceLister, error) {
	w, err := rtnl.NewWatcher(path)
	if err != nil {
		return nil, err
	}
	return &ifaceLister{w: w}, nil
}

// list returns the interfaces' names and indexes.
func (l *ifaceLister) list() ([]rtnl.Iface, error) { return l.w.Interfaces() }

// Close closes the lister's sockets.
func (l *ifaceLister) Close() error { return l.w.Close() }
