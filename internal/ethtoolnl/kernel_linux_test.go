package ethtoolnl_test

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolioctl"
	"github.com/nic-exporter/nic_exporter/internal/ethtoolnl"
	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestNetdevsim boots the guest kernel (6.1) once and runs the client
// against a netdevsim port, whose ethtool ops in 6.1 are pause, coalesce,
// ring, channel and FEC parameters (drivers/net/netdevsim/ethtool.c): FEC
// as netdevsim reports it before and after ETHTOOL_MSG_FEC_SET, with
// statistics requested from a driver that keeps none; STATS with no
// standard counters; MODULE_EEPROM and the legacy module ioctls with
// EOPNOTSUPP; LINKSTATE without a link attribute.
func TestNetdevsim(t *testing.T) {
	if guest.InGuest() {
		netdevsimChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:     "^TestNetdevsim$",
		Args:    []string{"-test.v"},
		Modules: []string{"netdevsim"},
	})
	if !strings.Contains(res.Output, "--- PASS: TestNetdevsim") {
		t.Errorf("guest output lacks the passing test")
	}
}

func netdevsimChecks(t *testing.T) {
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte("11 1"), 0); err != nil {
		t.Fatalf("creating a netdevsim device: %v", err)
	}
	nets, err := os.ReadDir("/sys/bus/netdevsim/devices/netdevsim11/net")
	if err != nil || len(nets) != 1 {
		t.Fatalf("netdevsim11 netdevs: %v, %v", nets, err)
	}
	port := nets[0].Name()
	t.Logf("netdevsim port %s", port)

	c, err := ethtoolnl.New(ethtoolnl.Config{}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	t.Run("fec", func(t *testing.T) {
		// netdevsim starts with fec = active_fec = ETHTOOL_FEC_NONE,
		// which maps to no link mode: no ACTIVE attribute, auto off.
		f, err := c.FEC(port)
		if err != nil {
			t.Fatalf("FEC: %v", err)
		}
		if f.Active != nil || f.Auto == nil || *f.Auto {
			t.Errorf("initial FEC %+v, want no active mode and auto off", f)
		}
		if f.Corrected != nil || f.Uncorrectable != nil || f.CorrectedBits != nil || f.Hist != nil {
			t.Errorf("FEC statistics from a driver without get_fec_stats: %+v", f)
		}
		for _, mode := range []ethtoolnl.FECMode{ethtoolnl.FECRS, ethtoolnl.FECBaseR, ethtoolnl.FECLLRS} {
			if err := c.SetFEC(port, mode); err != nil {
				t.Fatalf("FEC_SET %v: %v", mode, err)
			}
			f, err := c.FEC(port)
			if err != nil {
				t.Fatalf("FEC after setting %v: %v", mode, err)
			}
			if f.Active == nil || *f.Active != mode {
				t.Errorf("active FEC after setting %v: %v", mode, f.Active)
			}
		}
	})

	t.Run("stats", func(t *testing.T) {
		st, err := c.Stats(port)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if len(st.Groups) != 0 || st.RxHist != nil || st.TxHist != nil {
			t.Errorf("Stats on netdevsim = %+v, want no counters", st)
		}
	})

	t.Run("module", func(t *testing.T) {
		_, err := c.ModuleEEPROM(port, ethtoolnl.ModuleEEPROMRequest{Addr: 0x50, Length: 128})
		if !errclass.IsUnsupported(err) {
			t.Errorf("ModuleEEPROM on netdevsim: %v, want EOPNOTSUPP", err)
		}
		s, err := ethtoolioctl.New("")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.ModuleInfo(port); !errclass.IsUnsupported(err) {
			t.Errorf("GMODULEINFO on netdevsim: %v, want EOPNOTSUPP", err)
		}
	})

	t.Run("linkstate", func(t *testing.T) {
		// netdevsim has no get_link op: the kernel answers LINKSTATE
		// without the LINK attribute rather than with an error.
		ls, err := c.LinkState(port)
		if err != nil {
			t.Fatalf("LinkState: %v", err)
		}
		if ls != (ethtoolnl.LinkState{}) {
			t.Errorf("LinkState on netdevsim = %+v, want no attributes", ls)
		}
	})
}
