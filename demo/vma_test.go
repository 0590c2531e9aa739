package demo

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

func TestVMAPartFaults(t *testing.T) {
	for _, tc := range []struct {
		faults            string
		offloaded, noBufs bool
	}{
		{"", true, false},
		{"vma_os_fallback@30s", false, false},
		{"vma_no_buffers@30s", true, true},
	} {
		t.Run(tc.faults, func(t *testing.T) {
			h, err := New(Config{Faults: tc.faults, Elapsed: time.Minute}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			cands, err := vmastats.Discover([]string{h.VMADir()})
			if err != nil || len(cands) != 1 || cands[0].PID != vmaDemoPID {
				t.Fatalf("candidates %v, %v", cands, err)
			}
			l, err := vmastats.Load(cands[0], vmastats.LoadOptions{Liveness: h.VMALiveness()})
			if err != nil {
				t.Fatal(err)
			}
			s := l.Stats
			if s.Layout != vmastats.LayoutB || s.Version() != "9.8.84.0" || len(s.Sockets) != 2 || !l.Handshake {
				t.Fatalf("layout %v version %s sockets %d handshake %v", s.Layout, s.Version(), len(s.Sockets), l.Handshake)
			}
			tcp := s.Sockets[1]
			if tcp.Offloaded != tc.offloaded || (tcp.Counters[vmastats.TxOSPackets] > 0) == tc.offloaded {
				t.Errorf("tcp offloaded %v, os tx packets %d", tcp.Offloaded, tcp.Counters[vmastats.TxOSPackets])
			}
			if (s.BufferPools[0].NoBuffers > 0) != tc.noBufs || (s.Sockets[0].Counters[vmastats.RxReadyPktDrop] > 0) != tc.noBufs {
				t.Errorf("no buffers %d, ready drops %d", s.BufferPools[0].NoBuffers, s.Sockets[0].Counters[vmastats.RxReadyPktDrop])
			}
			// Any other pid in the demo directory is not the application.
			if _, err := h.VMALiveness().Verify(1, l.Info); err == nil {
				t.Error("demo liveness accepted another pid")
			}
		})
	}
}
