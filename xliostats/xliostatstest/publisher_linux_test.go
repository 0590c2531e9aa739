package xliostatstest

import (
	"bytes"
	"os"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestPollCopiesOnlyAfterAReaderAsks follows libxlio's timer: nothing is
// copied until reader_counter changes, then once per change.
func TestPollCopiesOnlyAfterAReaderAsks(t *testing.T) {
	for _, tc := range []struct {
		tag string
		rc  int
	}{{"3.21.2", 0}, {"3.70.2", 8408}} {
		t.Run(tc.tag, func(t *testing.T) {
			empty, err := os.ReadFile("../testdata/golden/" + tc.tag + "/xliostat-nodevice.bin")
			if err != nil {
				t.Fatal(err)
			}
			full, err := os.ReadFile("../testdata/golden/" + tc.tag + "/xliostat.bin")
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPublisher(t.TempDir(), os.Getpid(), empty)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			bump := func() { atomic.AddInt32((*int32)(unsafe.Pointer(&p.mem[tc.rc])), 1) }
			for i, step := range []struct {
				bump bool
				want bool
			}{{false, false}, {true, true}, {false, false}, {true, true}, {true, true}} {
				if step.bump {
					bump()
				}
				copied, err := p.Poll(full)
				if err != nil || copied != step.want {
					t.Fatalf("step %d: copied %v (%v), want %v", i, copied, err, step.want)
				}
			}
			got, _ := os.ReadFile(p.Path())
			if !bytes.Equal(got[tc.rc+4:], full[tc.rc+4:]) || p.ReaderCounter() != 3 || p.Copies() != 3 {
				t.Errorf("after 3 asks: reader_counter %d, %d copies", p.ReaderCounter(), p.Copies())
			}
		})
	}
}
