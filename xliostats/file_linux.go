package xliostats

import (
	"fmt"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// Load opens, verifies, handshakes and decodes the file of c, with the
// checks of vmastats.Open (no symbolic link, a regular file with one
// link and no mount on it, written by the live process it names: owner,
// start time, and the process maps this very inode). Then:
//
//  1. the whole file is read once with pread, its size bounded by
//     MinSize and MaxSize, and its layout identified (Identify); an
//     unknown or inconsistent layout is refused before anything is
//     written;
//  2. the reader handshake: reader_counter, at its offset in this layout
//     (0 before 3.60, 7384 or 8408 after), is incremented atomically,
//     the one write a reader makes, and Load waits opts.Settle so
//     libxlio's 10 ms timer copies its counters into the file
//     (xlio_stats waits 15 ms);
//  3. the file is read again until two reads agree (outside the reader
//     counter), and decoded with the layout of step 1, which must not
//     have changed.
//
// The handshake needs write access to a file of mode 0644 owned by the
// application's user, so it happens only when the exporter runs as that
// user or as root, and not with opts.NoHandshake.
func Load(c vmastats.Candidate, opts vmastats.LoadOptions) (*Loaded, error) {
	f, err := vmastats.Open(c, opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := vmastats.CheckSize(f, c.Path, opts.MaxSize); err != nil {
		return nil, err
	}
	size := f.Size()
	if size < MinSize || size > MaxSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, outside the sizes of every libxlio layout (%d to %d)", c.Path, ErrUnsupported, size, MinSize, MaxSize)
	}
	first := make([]byte, size)
	if n, err := f.ReadAt(first, 0); int64(n) != size {
		return nil, fmt.Errorf("%s: %w: file shrank while it was read (%d of %d bytes): %v", c.Path, ErrMalformed, n, size, err)
	}
	h, err := Identify(first)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	rc := int64(h.Layout.ReaderCounterOffset())

	out := &Loaded{Process: f.Process, Info: f.Info}
	if out.Handshake, err = f.Handshake(rc, opts.Settle); err != nil {
		return nil, err
	}
	buf, err := f.ReadStable(size, rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	s, err := Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	if s.Layout != h.Layout {
		return nil, fmt.Errorf("%s: %w: the layout changed between two reads", c.Path, ErrMalformed)
	}
	out.Stats, out.Raw = s, buf
	return out, nil
}
