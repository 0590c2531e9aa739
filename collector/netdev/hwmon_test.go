package netdev

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// TestHwmonReads checks what the temperature channels cost and how their
// failures are handled: the name, labels and thresholds are read at the
// first poll of an interface identity only (on mlx5 each read is a
// firmware command), input and highest at every poll; an input that fails
// drops that series and is a source error while the other channels stay;
// a value that does not parse is a parse error.
func TestHwmonReads(t *testing.T) {
	root := sysfsFixture(t)
	hw := filepath.Join(root, "devices/pci0000:00/0000:00:01.1/0000:08:00.1/hwmon/hwmon3")
	f, err := collector.NewNameFilter("collector.netdev.device", "enp8s0f1np1", "")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{SysfsPath: root, Filter: f}, zap.NewNop())
	reads := map[string]int{}
	var fail map[string]error
	c.readAttr = func(path string) (string, error) {
		if strings.HasPrefix(path, hw) {
			reads[filepath.Base(path)]++
			if err := fail[filepath.Base(path)]; err != nil {
				return "", err
			}
		}
		return sysfs.ReadAttr(path)
	}
	for range 3 {
		pollOnce(t, c)
	}
	for file, want := range map[string]int{"name": 1, "temp1_label": 1, "temp1_crit": 1, "temp1_emergency": 1, "temp2_crit": 1,
		"temp1_input": 3, "temp1_highest": 3, "temp2_input": 3, "temp2_highest": 3} {
		if reads[file] != want {
			t.Errorf("%s read %d times in 3 polls, want %d", file, reads[file], want)
		}
	}

	fail = map[string]error{"temp1_input": &os.PathError{Op: "read", Path: "temp1_input", Err: syscall.EIO}}
	snap, errs := pollOnce(t, c)
	text := snap.String()
	if strings.Contains(text, `nic_hwmon_temperature_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor0"}`) ||
		!strings.Contains(text, `nic_hwmon_temperature_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor64"} 48.125`) ||
		!strings.Contains(text, `nic_hwmon_temperature_critical_celsius{device="enp8s0f1np1",pci_address="0000:08:00.1",chip="mlx5",sensor="sensor0"} 105`) {
		t.Errorf("with temp1_input failing: want its series dropped and the others kept:\n%s", text)
	}
	if !hasReason(errs, "eio") {
		t.Errorf("a failing temp1_input is no eio source error: %v", errs.Counts())
	}

	fail = nil
	if err := os.WriteFile(filepath.Join(hw, "temp2_input"), []byte("48.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs = pollOnce(t, c)
	if !hasReason(errs, "parse") {
		t.Errorf("temp2_input 48.1 is no parse error: %v", errs.Counts())
	}
}

func hasReason(errs *collector.SourceErrors, reason string) bool {
	for _, rc := range errs.Counts() {
		if rc.Reason == reason && rc.Count > 0 {
			return true
		}
	}
	return false
}

func TestParseMilliCelsius(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"56000", 56, true}, {"48125", 48.125, true}, {"-5250", -5.25, true}, {"0", 0, true},
		{"", 0, false}, {"48.1", 0, false}, {"NaN", 0, false}, {"1e5", 0, false},
	} {
		got, err := parseMilliCelsius(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMilliCelsius(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseMilliCelsius(f *testing.F) {
	for _, s := range []string{"56000", "-5250", "", "48.1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseMilliCelsius(s)
		if err != nil && v != 0 {
			t.Errorf("parseMilliCelsius(%q) = %v with error %v", s, v, err)
		}
	})
}
