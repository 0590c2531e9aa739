package demo

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

func xlioCandidate(t *testing.T, h *Host) vmastats.Candidate {
	t.Helper()
	sc := vmastats.NewScanner(vmastats.ScannerConfig{Dirs: []string{h.XLIODir()}, Prefix: xliostats.FilePrefix, Liveness: h.XLIOLiveness()})
	scan, err := sc.Scan([]vmastats.Candidate{{Path: h.XLIODir() + "/xliostat.4343", PID: xlioDemoPID}})
	if err != nil || len(scan.Candidates) != 1 || scan.Candidates[0].PID != xlioDemoPID {
		t.Fatalf("candidates %+v, %v", scan, err)
	}
	return scan.Candidates[0]
}

func TestXLIOPartFaults(t *testing.T) {
	for _, tc := range []struct {
		faults string
		noBufs bool
	}{
		{"", false},
		{"xlio_no_buffers@30s", true},
	} {
		t.Run(tc.faults, func(t *testing.T) {
			h, err := New(Config{Faults: tc.faults, Elapsed: time.Minute}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			l, err := xliostats.Load(xlioCandidate(t, h), vmastats.LoadOptions{Liveness: h.XLIOLiveness()})
			if err != nil {
				t.Fatal(err)
			}
			s := l.Stats
			if s.LayoutName() != "G2+utls" || s.Version() != "3.70.2.0" || len(s.Sockets) != 3 || s.MaxSockets != xlioDemoSockets || !l.Handshake {
				t.Fatalf("layout %s version %s sockets %d/%d handshake %v", s.LayoutName(), s.Version(), len(s.Sockets), s.MaxSockets, l.Handshake)
			}
			noBufs, _ := s.BufferPools[0].Get("n_buffer_pool_no_bufs")
			drops, _ := s.CQs[0].Get("n_rx_sw_pkt_drops")
			ready, _ := s.Sockets[2].Get("n_rx_ready_pkt_drop")
			if (noBufs > 0) != tc.noBufs || (drops > 0) != tc.noBufs || (ready > 0) != tc.noBufs {
				t.Errorf("no buffers %d, CQ drops %d, ready-queue drops %d", noBufs, drops, ready)
			}
			if _, err := h.XLIOLiveness().Verify(vmaDemoPID, l.Info); err == nil {
				t.Error("the XLIO liveness accepted the VMA application's pid")
			}
		})
	}
}

// TestXLIOPartCopiesOnlyWhenAsked walks the demo clock: the counters in
// the file advance while a reader increments reader_counter, and stay as
// they were (like libxlio's) when nobody has asked for 10 s.
func TestXLIOPartCopiesOnlyWhenAsked(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h, err := New(Config{Now: func() time.Time { return now }}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := xlioCandidate(t, h)
	rx := func(handshake bool) uint64 {
		t.Helper()
		l, err := xliostats.Load(c, vmastats.LoadOptions{Liveness: h.XLIOLiveness(), NoHandshake: !handshake})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := l.Stats.Rings[0].Get("n_rx_pkt_count")
		return v
	}
	step := func(d time.Duration) {
		now = now.Add(d)
		if err := h.Update(); err != nil {
			t.Fatal(err)
		}
	}
	first := rx(false)
	step(30 * time.Second) // nobody asked since the start's copy
	if got := rx(true); got != first {
		t.Fatalf("counters moved without a reader: %d, then %d", first, got)
	}
	step(time.Second) // the handshake above asked
	second := rx(false)
	if second <= first {
		t.Fatalf("counters did not move after a handshake: %d, then %d", first, second)
	}
	step(5 * time.Second) // within 10 s of the ask: still copied
	third := rx(false)
	if third <= second {
		t.Errorf("no copy within 10 s of the ask: %d, then %d", second, third)
	}
	step(20 * time.Second) // no ask since
	if got := rx(false); got != third {
		t.Errorf("counters moved 25 s after the last ask: %d, then %d", third, got)
	}
}
