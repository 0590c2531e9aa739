package errclass

import (
	"sync"
	"time"
)

// Memo remembers the operations (attribute files, ioctls, netlink
// requests) a device answered as unsupported, so that they are not asked
// again on every poll: on some adapters every such request costs a
// firmware command or an I2C transaction. Entries are keyed by a device
// identity that changes when the device is re-created (a driver reload
// makes a new ifindex), and by the operation. With a Retry above zero an
// entry is forgotten once it is that old, for a cause that may go away
// (a capability granted later); with zero it is kept until Retain drops
// the device. It is safe for concurrent use.
type Memo struct {
	retry time.Duration
	now   func() time.Time

	mu sync.Mutex
	m  map[string]map[string]time.Time // identity -> operation -> when remembered
}

// MemoConfig configures a Memo.
type MemoConfig struct {
	// Retry is how long an operation stays remembered; zero or less
	// keeps it until the device goes away.
	Retry time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewMemo returns an empty Memo.
func NewMemo(cfg MemoConfig) *Memo {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Memo{retry: cfg.Retry, now: cfg.Now, m: make(map[string]map[string]time.Time)}
}

// Has reports whether op of the device identity is remembered. An entry
// older than the Retry is forgotten and reported as not remembered.
func (u *Memo) Has(identity, op string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.m[identity][op]
	if !ok {
		return false
	}
	if u.retry > 0 && u.now().Sub(at) >= u.retry {
		delete(u.m[identity], op)
		return false
	}
	return true
}

// Add remembers op of the device identity.
func (u *Memo) Add(identity, op string) {
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.m[identity]
	if a == nil {
		a = make(map[string]time.Time)
		u.m[identity] = a
	}
	a[op] = now
}

// Remember remembers op of the device identity if unsupported(err), and
// reports whether it did. Any other error may pass: the operation is
// asked again at the next poll. Sysfs readers pass IsUnsupportedAttr,
// ioctl and netlink readers IsUnsupported.
func (u *Memo) Remember(identity, op string, err error, unsupported func(error) bool) bool {
	if err == nil || !unsupported(err) {
		return false
	}
	u.Add(identity, op)
	return true
}

// Forget drops what is remembered of the device identity.
func (u *Memo) Forget(identity string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, identity)
}

// Retain forgets every identity not in keep, so that devices that went
// away do not keep memory.
func (u *Memo) Retain(keep map[string]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id := range u.m {
		if !keep[id] {
			delete(u.m, id)
		}
	}
}

// Len returns the number of remembered operations, over all devices.
func (u *Memo) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, ops := range u.m {
		n += len(ops)
	}
	return n
}
