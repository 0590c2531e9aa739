package collector

import "sync"

// unsupportedSet remembers attribute files that answered EINVAL or
// EOPNOTSUPP for a device, so they are not read again on every poll: on
// some adapters every read costs a firmware command. Entries are keyed by
// a device identity that changes when the device is re-created.
type unsupportedSet struct {
	mu sync.Mutex
	m  map[string]map[string]bool // identity -> attribute -> true
}

func newUnsupportedSet() *unsupportedSet {
	return &unsupportedSet{m: make(map[string]map[string]bool)}
}

func (u *unsupportedSet) has(identity, attr string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[identity][attr]
}

func (u *unsupportedSet) add(identity, attr string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.m[identity]
	if a == nil {
		a = make(map[string]bool)
		u.m[identity] = a
	}
	a[attr] = true
}

// retain forgets every identity not in keep, so devices that went away
// do not keep memory.
func (u *unsupportedSet) retain(keep map[string]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id := range u.m {
		if !keep[id] {
			delete(u.m, id)
		}
	}
}
