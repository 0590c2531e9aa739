package infiniband

import "github.com/nic-exporter/nic_exporter/internal/sysfs"

// relistEvery is how many polls the listing of a counter directory is
// used before the directory is listed again. The counter files of a port
// are created when the driver registers the device and stay while it
// exists, so listing them on every poll (an open, two getdents and a sort
// for each of a port's three counter directories) only repeated the same
// answer; a new identity (a re-created device) is listed at once, a file
// that disappears makes its directory be listed at the next poll, and the
// periodic listing catches anything else. A minute at the default 5 s
// interval.
const relistEvery = 12

// counterFile is one counter file that a listing found, with its path
// resolved once.
type counterFile struct {
	ctr  ibCounter
	bits uint   // the width of a fixed-width counter, 0 for 64 bits
	rel  string // relative to the device directory, the memo's key
	attr sysfs.Attr
}

// counterDir is the listing of one counter directory: the files a poll
// reads, in the order it exports them, and the directories they are
// opened in.
type counterDir struct {
	files  []counterFile
	dirs   []*sysfs.Dir
	listed uint64 // the poll that listed the directory
}

// close releases the listing's directories.
func (cd *counterDir) close() {
	for _, d := range cd.dirs {
		d.Close()
	}
	cd.dirs = nil
}

// listings remembers the counter directory listings of each device
// identity between polls, and closes the directories of those it forgets.
// Only the collector's Update uses it, one poll at a time.
type listings struct {
	poll uint64
	byID map[string]map[string]*counterDir
}

// next starts a poll.
func (l *listings) next() { l.poll++ }

// get returns the listing of dir of the device identity, or nil when
// there is none or it is older than relistEvery polls.
func (l *listings) get(identity, dir string) *counterDir {
	cd := l.byID[identity][dir]
	if cd == nil || l.poll-cd.listed >= relistEvery {
		return nil
	}
	return cd
}

// put remembers cd as the listing of dir made in this poll.
func (l *listings) put(identity, dir string, cd *counterDir) {
	if l.byID == nil {
		l.byID = make(map[string]map[string]*counterDir)
	}
	dirs := l.byID[identity]
	if dirs == nil {
		dirs = make(map[string]*counterDir)
		l.byID[identity] = dirs
	}
	if old := dirs[dir]; old != nil && old != cd {
		old.close()
	}
	cd.listed = l.poll
	dirs[dir] = cd
}

// drop forgets the listing of dir.
func (l *listings) drop(identity, dir string) {
	if cd := l.byID[identity][dir]; cd != nil {
		cd.close()
		delete(l.byID[identity], dir)
	}
}

// retain forgets the listings of identities that are not in seen.
func (l *listings) retain(seen map[string]bool) {
	for id, dirs := range l.byID {
		if !seen[id] {
			for _, cd := range dirs {
				cd.close()
			}
			delete(l.byID, id)
		}
	}
}

// closeAll forgets every listing.
func (l *listings) closeAll() { l.retain(nil) }
