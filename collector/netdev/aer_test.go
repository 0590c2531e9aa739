package netdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

// TestParseAER parses the AER statistics fixtures of testdata/aer (see its
// README for the source of each) and compares the result with a golden
// file; the bad ones must fail with a parse error.
func TestParseAER(t *testing.T) {
	tests := []struct {
		file, total string
		wantErr     bool
	}{
		{file: "abi-4.19-correctable.txt", total: "TOTAL_ERR_COR"},
		{file: "abi-4.19-fatal.txt", total: "TOTAL_ERR_FATAL"},
		{file: "linux-6.1-correctable.txt", total: "TOTAL_ERR_COR"},
		{file: "linux-6.1-nonfatal.txt", total: "TOTAL_ERR_NONFATAL"},
		{file: "qemu-6.1-virtio-correctable-injected.txt", total: "TOTAL_ERR_COR"},
		{file: "qemu-6.1-virtio-nonfatal-injected.txt", total: "TOTAL_ERR_NONFATAL"},
		{file: "bad-no-total.txt", total: "TOTAL_ERR_COR", wantErr: true},
		{file: "bad-negative.txt", total: "TOTAL_ERR_COR", wantErr: true},
		{file: "bad-after-total.txt", total: "TOTAL_ERR_COR", wantErr: true},
		{file: "bad-no-count.txt", total: "TOTAL_ERR_COR", wantErr: true},
		{file: "bad-wrong-total.txt", total: "TOTAL_ERR_COR", wantErr: true},
		{file: "bad-nan.txt", total: "TOTAL_ERR_COR", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "aer", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			// sysfs.ReadAttr trims the attribute as the collector does.
			total, types, err := parseAER(strings.TrimSpace(string(raw)), tc.total)
			if tc.wantErr {
				if !errors.Is(err, errclass.ErrParse) {
					t.Fatalf("parseAER = %d, %v, %v; want a parse error", total, types, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s %d\n", tc.total, total)
			for _, ty := range types {
				fmt.Fprintf(&b, "%q %d\n", ty.Type, ty.Count)
			}
			golden(t, filepath.Join("aer", strings.TrimSuffix(tc.file, ".txt")+".golden"), b.String())
		})
	}
}

// FuzzParseAER checks that parseAER never panics and that what it accepts
// ends in the total line.
func FuzzParseAER(f *testing.F) {
	for _, name := range []string{"abi-4.19-correctable.txt", "linux-6.1-correctable.txt", "bad-after-total.txt"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "aer", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, types, err := parseAER(s, "TOTAL_ERR_COR")
		if err != nil {
			return
		}
		if !strings.Contains(s, "TOTAL_ERR_COR") {
			t.Errorf("accepted %q without its total line", s)
		}
		for _, ty := range types {
			if ty.Type == "" || strings.HasPrefix(ty.Type, "TOTAL_") {
				t.Errorf("type %q from %q", ty.Type, s)
			}
		}
	})
}

// aerFixture is the netdev fixture with AER statistics on the ConnectX-7
// function (the Linux 6.1 fixtures), none on the ENA function (no AER
// capability), and, when broken is set, an aer_dev_fatal that cannot be
// read (a directory, standing in for EIO) and an aer_dev_nonfatal that
// does not parse.
func aerFixture(t *testing.T, broken bool) string {
	t.Helper()
	root := sysfsFixture(t)
	fn := filepath.Join(root, "devices/pci0000:00/0000:00:01.1/0000:08:00.1")
	copyFile := func(src, dst string) {
		raw, err := os.ReadFile(filepath.Join("testdata", "aer", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fn, dst), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("linux-6.1-correctable.txt", "aer_dev_correctable")
	if broken {
		copyFile("bad-no-total.txt", "aer_dev_nonfatal")
		if err := os.Mkdir(filepath.Join(fn, "aer_dev_fatal"), 0o755); err != nil {
			t.Fatal(err)
		}
		return root
	}
	copyFile("linux-6.1-nonfatal.txt", "aer_dev_nonfatal")
	if err := os.WriteFile(filepath.Join(fn, "aer_dev_fatal"), []byte("Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestNetdevAER polls fixture trees with AER statistics: the totals go to
// the default scrape, the per-type counters to the detail part, a function
// without AER files has no AER series and no error, and an unreadable
// file (not EINVAL or EOPNOTSUPP, so it may be readable at the next poll)
// and a file that does not parse are counted on every poll.
func TestNetdevAER(t *testing.T) {
	tests := []struct {
		name   string
		broken bool
		// wantErrs are the source errors after two polls, by reason.
		wantErrs map[string]uint64
	}{
		{name: "healthy", wantErrs: map[string]uint64{"parse": 2, "other": 2}},                      // the base fixture's rx_dropped and lo tx_packets, per poll
		{name: "broken", broken: true, wantErrs: map[string]uint64{"parse": 2 + 2, "other": 2 + 2}}, // plus aer_dev_nonfatal and aer_dev_fatal per poll
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := aerFixture(t, tc.broken)
			f, err := collector.NewNameFilter("collector.netdev.device", "", "docker.*")
			if err != nil {
				t.Fatal(err)
			}
			c := New(Config{SysfsPath: root, Filter: f}, zap.NewNop())
			errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
			var snapText, detailText string
			for i := 0; i < 2; i++ {
				b := exposition.NewBuilder()
				if err := c.Update(context.Background(), collector.NewPoll(b, errs)); err != nil {
					t.Fatalf("Update: %v", err)
				}
				snap := b.Snapshot()
				snapText, detailText = aerLines(snap.String()), aerLines(snap.Detail().String())
			}
			golden(t, "aer_"+tc.name+".prom", snapText)
			golden(t, "aer_"+tc.name+"_detail.prom", detailText)
			if strings.Contains(snapText+detailText, `device="ens5"`) {
				t.Errorf("ens5 has no AER capability but has AER series")
			}
			got := map[string]uint64{}
			for _, rc := range errs.Counts() {
				got[rc.Reason] += rc.Count
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("source errors after two polls (-want +got):\n%s", diff)
			}
		})
	}
}

// aerLines keeps the AER families of an exposition.
func aerLines(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.Contains(line, "nic_pcie_aer_") {
			b.WriteString(line)
		}
	}
	return b.String()
}
