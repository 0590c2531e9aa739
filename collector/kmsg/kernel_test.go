package kmsg

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestKmsgKernel boots a real kernel under qemu and runs, inside it, the
// checks that write to /dev/kmsg: the guest's kernel log, never this
// machine's. Only the unprivileged-open test (which reads) runs on the
// host.
func TestKmsgKernel(t *testing.T) {
	if guest.InGuest() {
		t.Run("write", kmsgWriteChecks)
		t.Run("sysfs", kmsgSysfsChecks)
		return
	}
	res := guest.RunTest(t, guest.Config{Run: "^TestKmsgKernel$", Args: []string{"-test.v"}})
	for _, want := range []string{"--- PASS: TestKmsgKernel/write", "--- PASS: TestKmsgKernel/sysfs", "--- PASS: TestKmsgKernel"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("guest output lacks %q", want)
		}
	}
}

// guestKmsg returns a function writing lines to the guest's /dev/kmsg
// with level 3, as a driver's error would be. The kernel rate-limits
// writes per open file (a burst of 10 per 5 s with printk.devkmsg at its
// default), so the device is reopened after every 10 lines.
func guestKmsg(t *testing.T) func(line string) {
	t.Helper()
	if !guest.InGuest() {
		t.Fatal("writing /dev/kmsg outside the qemu guest")
	}
	var w *os.File
	n := 0
	t.Cleanup(func() {
		if w != nil {
			w.Close()
		}
	})
	return func(line string) {
		t.Helper()
		if w == nil || n == 10 {
			if w != nil {
				w.Close()
			}
			var err error
			if w, err = os.OpenFile("/dev/kmsg", os.O_WRONLY, 0); err != nil {
				t.Fatalf("opening the guest's /dev/kmsg for writing: %v", err)
			}
			n = 0
		}
		n++
		if _, err := w.Write([]byte("<3>" + line + "\n")); err != nil {
			t.Fatalf("writing %q to /dev/kmsg: %v", line, err)
		}
	}
}

// kmsgWriteChecks writes documented driver lines to the real /dev/kmsg
// and checks that the counters rise and that unrelated lines with the
// same devices do not match, first without and then with replay. Each
// run uses a PCI domain and interface names of its own, so records of
// earlier runs still in the kernel buffer cannot be confused with this
// run's.
func kmsgWriteChecks(t *testing.T) {
	write := guestKmsg(t)
	id := rand.Uint32()
	pci := fmt.Sprintf("%04x:08:00.0", 0x8000|id&0x7fff)
	ifname := fmt.Sprintf("nxt%x", id&0xffffff)

	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("replay=%v", replay), func(t *testing.T) {
			k := New(Config{Open: OpenDevKmsg("/dev/kmsg"), Rules: kernelEngine(t), Replay: replay, PublishInterval: 20 * time.Millisecond}, zap.NewNop())
			// The first poll opens the device: without replay it skips the
			// buffer; with replay it has read the whole buffer, including
			// the lines the first subtest wrote.
			first := pollText(t, k)
			if replay && !strings.Contains(first, `device="`+pci+`",event="mlx5_cmd_timeout"} 2`) {
				t.Errorf("first poll with replay does not show the buffered records:\n%s", first)
			}
			_, stop := runWatch(t, k)
			defer stop()
			if !replay {
				write("mlx5_core " + pci + ": poll_health:801:(pid 0): device's health compromised - reached miss count")
				write("mlx5_core " + pci + ": wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource")
				write("mlx5_core " + pci + ": wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource")
				write("ena 0000:00:05.0 " + ifname + ": Keep alive watchdog timeout.")
				// A restricted PF's register read: its own info event.
				write("mlx5_core " + pci + ": mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)")
				// Unrelated lines naming the same devices.
				write("mlx5_core " + pci + ": firmware version: 28.39.1002")
				write("ena 0000:00:05.0 " + ifname + ": Link is up")
			}
			out := waitFor(t, k,
				`nic_kernel_log_events_total{driver="mlx5_core",device="`+pci+`",event="mlx5_health_compromised"} 1`,
				`nic_kernel_log_events_total{driver="mlx5_core",device="`+pci+`",event="mlx5_cmd_timeout"} 2`,
				`nic_kernel_log_events_total{driver="mlx5_core",device="`+pci+`",event="mlx5_access_reg_restricted"} 1`,
				`nic_kernel_log_events_total{driver="ena",device="`+ifname+`",event="ena_keep_alive_timeout"} 1`,
			)
			var series int
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "nic_kernel_log_events_total{") && (strings.Contains(l, pci) || strings.Contains(l, ifname)) {
					series++
				}
			}
			if series != 4 {
				t.Errorf("%d event series for this run's devices, want 4 (unrelated lines must not match):\n%s", series, out)
			}
		})
	}
}

// kmsgSysfsChecks writes AER lines about the guest's own PCI functions
// (qemu's bridges and controllers, none a network controller) and about
// a function that does not exist, and checks the PCI class lookup in the
// guest's real sysfs: the former are not counted, the latter is.
func kmsgSysfsChecks(t *testing.T) {
	write := guestKmsg(t)
	fns, err := filepath.Glob("/sys/bus/pci/devices/*")
	if err != nil || len(fns) == 0 {
		t.Fatalf("no PCI functions in the guest's sysfs (%v)", err)
	}
	devs := SysfsDevices("/sys")
	var others []string
	for _, fn := range fns {
		addr := filepath.Base(fn)
		class, ok := devs.PCIClass(addr)
		if !ok {
			t.Fatalf("sysfs does not give the class of %s", addr)
		}
		if !IsNICClass(class) {
			others = append(others, addr)
		}
	}
	if len(others) == 0 {
		t.Fatal("the guest has no PCI function other than a network controller")
	}
	const unknown = "0000:7f:1f.7"
	if _, ok := devs.PCIClass(unknown); ok {
		t.Fatalf("%s exists in the guest", unknown)
	}

	k := New(Config{Open: OpenDevKmsg("/dev/kmsg"), Rules: kernelEngine(t), Devices: devs, PublishInterval: 20 * time.Millisecond}, zap.NewNop())
	pollText(t, k) // opens at the end of the buffer
	_, stop := runWatch(t, k)
	defer stop()
	for _, addr := range others {
		write("pcieport " + others[0] + ": AER: Uncorrectable (Fatal) error message received from " + addr)
		write("xhci_hcd " + addr + ": PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Requester ID)")
	}
	write("pcieport " + others[0] + ": AER: Uncorrectable (Fatal) error message received from " + unknown)
	out := waitFor(t, k, `nic_kernel_log_events_total{driver="pci",device="`+unknown+`",event="pcie_aer_fatal"} 1`)
	// The records are read in order: once the last one is counted, the
	// earlier ones have been seen.
	for _, addr := range others {
		if strings.Contains(out, `device="`+addr+`"`) {
			t.Errorf("AER lines of %s (no network controller) were counted:\n%s", addr, out)
		}
	}
}
