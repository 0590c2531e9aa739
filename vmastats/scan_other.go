//go:build !linux

package vmastats

// readNamesAt fails with ErrNotSupported: resumable directory reads use
// Linux system calls, and libvma runs only on Linux.
func readNamesAt(string, int64, int) ([]string, int64, bool, error) {
	return nil, 0, true, errOS()
}

// exists answers true, so opening the file reports ErrNotSupported.
func exists(string) bool { return true }

// LivePIDs implements PIDLister; it fails with ErrNotSupported.
func (*ProcLiveness) LivePIDs() ([]int, error) { return nil, errOS() }
