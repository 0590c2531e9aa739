package netdev

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
	"github.com/nic-exporter/nic_exporter/internal/sysfs"
)

// TestPCIeTransientReadErrors makes the PCIe link speed files and the AER
// statistics of the ConnectX function fail once, at the first poll, with
// the errors a busy or restricted host answers (EMFILE, ENFILE when file
// descriptors run out, EACCES) and with the errors a driver answers for
// an attribute it does not have (EINVAL, EOPNOTSUPP). A transient error
// drops the series for that poll only: they are back at the next one. Only
// the "unsupported" errors keep the files from being read again.
func TestPCIeTransientReadErrors(t *testing.T) {
	failing := []string{"current_link_speed", "max_link_speed", "aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"}
	series := []string{
		`nic_pcie_link_speed_gigatransfers_per_second{device="enp8s0f1np1",pci_address="0000:08:00.1"} 16`,
		`nic_pcie_link_max_speed_gigatransfers_per_second{device="enp8s0f1np1",pci_address="0000:08:00.1"} 32`,
		`nic_pcie_link_degraded{device="enp8s0f1np1",pci_address="0000:08:00.1"} 1`,
		`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="correctable"} 19`,
		`nic_pcie_aer_errors_total{device="enp8s0f1np1",pci_address="0000:08:00.1",severity="fatal"} 0`,
	}
	tests := []struct {
		err         syscall.Errno
		unsupported bool
	}{
		{err: syscall.EMFILE},
		{err: syscall.ENFILE},
		{err: syscall.EACCES},
		{err: syscall.EINVAL, unsupported: true},
		{err: syscall.EOPNOTSUPP, unsupported: true},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			root := aerFixture(t, false)
			f, err := collector.NewNameFilter("collector.netdev.device", "", "docker.*")
			if err != nil {
				t.Fatal(err)
			}
			c := New(Config{SysfsPath: root, Filter: f}, zap.NewNop())
			poll := 0
			reads := map[string]int{} // of the ConnectX function, by file name, over all polls
			c.readAttr = func(path string) (string, error) {
				if !strings.Contains(path, "0000:08:00.1") {
					return sysfs.ReadAttr(path)
				}
				name := filepath.Base(path)
				reads[name]++
				if poll == 0 {
					for _, f := range failing {
						if name == f {
							return "", &os.PathError{Op: "open", Path: path, Err: tc.err}
						}
					}
				}
				return sysfs.ReadAttr(path)
			}
			for ; poll < 3; poll++ {
				snap, errs := pollOnce(t, c)
				text := snap.String()
				var failed uint64
				for _, rc := range errs.Counts() {
					failed += rc.Count
				}
				for _, s := range series {
					present := strings.Contains(text, s+"\n")
					if want := poll > 0 && !tc.unsupported; present != want {
						t.Errorf("poll %d: %s present %v, want %v", poll, s, present, want)
					}
				}
				// The base fixture fails twice per poll (rx_dropped, lo's
				// tx_packets); the first poll adds one error per failing file.
				want := uint64(2)
				if poll == 0 {
					want += uint64(len(failing))
				}
				if failed != want {
					t.Errorf("poll %d: %d source errors, want %d", poll, failed, want)
				}
			}
			for _, f := range failing {
				want := 3
				if tc.unsupported {
					want = 1 // remembered: not read again
				}
				if got := reads[f]; got != want {
					t.Errorf("%s of the ConnectX function read %d times in 3 polls, want %d", f, reads[f], want)
				}
			}
		})
	}
}

// TestUnsupportedClassifier pins the errors that mean "the driver will
// never answer": only those may stop an attribute from being read again.
func TestUnsupportedClassifier(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{syscall.EINVAL, true},
		{syscall.EOPNOTSUPP, true},
		{&os.PathError{Op: "read", Path: "x", Err: syscall.EINVAL}, true},
		{fmt.Errorf("wrapped: %w", syscall.EOPNOTSUPP), true},
		{syscall.EMFILE, false},
		{syscall.ENFILE, false},
		{syscall.EACCES, false},
		{syscall.EPERM, false},
		{syscall.EIO, false},
		{syscall.ENOMEM, false},
		{syscall.ENOENT, false},
	} {
		if got := errclass.IsUnsupportedAttr(tc.err); got != tc.want {
			t.Errorf("IsUnsupported(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
