package sysfs

import "sync"

// UnsupportedSet remembers attribute files that answered EINVAL or
// EOPNOTSUPP (IsUnsupported, the one classification every collector
// uses) for a device, so they are not read again on every poll: on
// some adapters every read costs a firmware command. (The ethtool
// collector uses it the same way for ioctls a driver does not support.) Entries are keyed by
// a device identity that changes when the device is re-created. It is
// safe for concurrent use.
type UnsupportedSet struct {
	mu sync.Mutex
	m  map[string]map[string]bool // identity -> attribute -> true
}

// NewUnsupportedSet returns an empty UnsupportedSet.
func NewUnsupportedSet() *UnsupportedSet {
	return &UnsupportedSet{m: make(map[string]map[string]bool)}
}

// Has reports whether attr of the device identity was remembered.
func (u *UnsupportedSet) Has(identity, attr string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[identity][attr]
}

// Add remembers attr of the device identity as unsupported.
func (u *UnsupportedSet) Add(identity, attr string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.m[identity]
	if a == nil {
		a = make(map[string]bool)
		u.m[identity] = a
	}
	a[attr] = true
}

// Remember remembers attr of the device identity as unsupported if err
// says so (IsUnsupported), and reports whether it did. Any other error,
// such as EMFILE or ENFILE while file descriptors run out, or EACCES, may
// pass: the attribute is read again at the next poll.
func (u *UnsupportedSet) Remember(identity, attr string, err error) bool {
	if !IsUnsupported(err) {
		return false
	}
	u.Add(identity, attr)
	return true
}

// Retain forgets every identity not in keep, so devices that went away
// do not keep memory.
func (u *UnsupportedSet) Retain(keep map[string]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id := range u.m {
		if !keep[id] {
			delete(u.m, id)
		}
	}
}
