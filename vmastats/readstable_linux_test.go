package vmastats

import (
	"errors"
	"testing"
)

// scripted is a file whose content changes between reads: read i returns
// states[min(i, len-1)].
type scripted struct {
	states [][]byte
	reads  int
}

func (s *scripted) ReadAt(b []byte, off int64) (int, error) {
	st := s.states[min(s.reads, len(s.states)-1)]
	s.reads++
	return copy(b, st[off:]), nil
}

// TestReadStable drives the torn-read tolerance with a writer that is
// half-way through an update: a torn read is never returned as long as
// the next read differs from it, a reader counter that other readers bump
// (at any offset) does not count as a change, and a file that changes at
// every read fails with ErrUnstable after a bounded number of reads.
func TestReadStable(t *testing.T) {
	mk := func(counter, value byte) []byte {
		b := make([]byte, 64)
		b[40], b[48], b[49] = counter, value, value
		return b
	}
	torn := mk(0, 1)
	torn[49] = 2 // the first half of an update from 1 to 2
	for _, tc := range []struct {
		name    string
		states  [][]byte
		counter int64
		want    byte
		err     error
		reads   int
	}{
		{"stable", [][]byte{mk(0, 1)}, 40, 1, nil, 2},
		{"torn first read", [][]byte{torn, mk(0, 2)}, 40, 2, nil, 3},
		{"counter bumped between reads", [][]byte{mk(0, 1), mk(1, 1)}, 40, 1, nil, 2},
		{"counter at offset 0 is not skipped at 40", [][]byte{mk(0, 1), mk(1, 1), mk(2, 1), mk(3, 1)}, 0, 0, ErrUnstable, maxReadAttempts},
		{"changing every read", [][]byte{mk(0, 1), torn, mk(0, 2), mk(0, 3), mk(0, 4)}, 40, 0, ErrUnstable, maxReadAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &scripted{states: tc.states}
			b, err := readStable(f, 64, tc.counter)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if f.reads != tc.reads {
				t.Errorf("%d reads, want %d", f.reads, tc.reads)
			}
			if err == nil && (b[48] != tc.want || b[49] != tc.want) {
				t.Errorf("decoded %d/%d, want %d", b[48], b[49], tc.want)
			}
		})
	}
}
