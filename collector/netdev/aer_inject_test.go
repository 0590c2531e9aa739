package netdev

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// aerInjectDevice is the qemu id of the guest function TestNetdevAERKernel
// injects AER errors into.
const aerInjectDevice = "nic2"

// aerControlTTY is the guest's end of the control channel: the third
// serial port, after the kernel console and the test output.
const aerControlTTY = "/dev/ttyS2"

// aerInjector is the host side of AER injection: qemu's human monitor on
// one Unix socket and the guest's third serial port on another. The guest
// test writes a pcie_aer_inject_error command line to its serial port,
// the injector runs it on the monitor and writes back the monitor's one
// line answer, so the guest knows the error was sent before it waits for
// the kernel to count it.
type aerInjector struct {
	mon, ctl string
	stop     chan struct{}
	done     chan struct{}

	mu   sync.Mutex
	errs []string
	ran  []string
}

// startAERInjector starts serving the sockets whose qemu arguments
// qemuArgs returns; wait stops it and reports its errors.
func startAERInjector(t *testing.T) *aerInjector {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: t.TempDir's can be
	// longer.
	dir, err := os.MkdirTemp("", "aer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	inj := &aerInjector{
		mon: filepath.Join(dir, "mon.sock"), ctl: filepath.Join(dir, "ctl.sock"),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go inj.serve()
	return inj
}

// qemuArgs are the qemu arguments for the monitor socket and the guest's
// third serial port; qemu listens on both and does not wait for a client.
func (inj *aerInjector) qemuArgs() []string {
	return []string{
		"-chardev", "socket,id=aermon,path=" + inj.mon + ",server=on,wait=off", "-mon", "chardev=aermon,mode=readline",
		"-chardev", "socket,id=aerctl,path=" + inj.ctl + ",server=on,wait=off", "-serial", "chardev:aerctl",
	}
}

// wait stops the injector after qemu has exited and reports what it ran
// and any error.
func (inj *aerInjector) wait(t *testing.T) {
	t.Helper()
	close(inj.stop)
	<-inj.done
	inj.mu.Lock()
	defer inj.mu.Unlock()
	for _, r := range inj.ran {
		t.Logf("monitor: %s", r)
	}
	for _, e := range inj.errs {
		t.Errorf("AER injector: %s", e)
	}
}

func (inj *aerInjector) fail(format string, args ...any) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.errs = append(inj.errs, fmt.Sprintf(format, args...))
}

// dial connects to a qemu socket, retrying until qemu has created it or
// the injector is stopped (qemu starts after the guest test binary and
// initramfs are built).
func (inj *aerInjector) dial(path string) (net.Conn, bool) {
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			return c, true
		}
		select {
		case <-inj.stop:
			return nil, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (inj *aerInjector) serve() {
	defer close(inj.done)
	mon, ok := inj.dial(inj.mon)
	if !ok {
		return
	}
	defer mon.Close()
	ctl, ok := inj.dial(inj.ctl)
	if !ok {
		return
	}
	defer ctl.Close()
	monr := bufio.NewReader(mon)
	if _, err := readPrompt(monr); err != nil {
		inj.fail("monitor banner: %v", err)
		return
	}
	lines := bufio.NewScanner(ctl)
	for lines.Scan() {
		cmd := strings.TrimSpace(lines.Text())
		// Only the injection command, with a device id and an error
		// name, is passed to the monitor.
		if !aerInjectCommand.MatchString(cmd) {
			continue
		}
		if _, err := fmt.Fprintf(mon, "%s\n", cmd); err != nil {
			inj.fail("monitor: %v", err)
			return
		}
		out, err := readPrompt(monr)
		if err != nil {
			inj.fail("monitor after %q: %v", cmd, err)
			return
		}
		answer := monitorAnswer(cmd, out)
		inj.mu.Lock()
		inj.ran = append(inj.ran, cmd+" -> "+answer)
		inj.mu.Unlock()
		if _, err := fmt.Fprintf(ctl, "%s\n", answer); err != nil {
			inj.fail("control: %v", err)
			return
		}
	}
}

// aerInjectCommand is the one monitor command the injector runs.
var aerInjectCommand = regexp.MustCompile(`^pcie_aer_inject_error (-c )?[a-z0-9]+ [A-Z_]+$`)

// readPrompt reads the monitor's output up to its "(qemu) " prompt.
func readPrompt(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for !strings.HasSuffix(b.String(), "(qemu) ") {
		c, err := r.ReadByte()
		if err != nil {
			return b.String(), err
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// ansiEscape matches the terminal control sequences of qemu's readline.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// monitorAnswer is the monitor's answer to cmd in out, on one line: the
// echoed command and the prompt removed.
func monitorAnswer(cmd, out string) string {
	out = ansiEscape.ReplaceAllString(out, "")
	out = strings.TrimSuffix(out, "(qemu) ")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasSuffix(l, cmd) {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "(no answer)"
	}
	return strings.Join(lines, " | ")
}

// aerControl is the guest's end of the injector's control channel.
type aerControl struct {
	f *os.File
	r *bufio.Reader
}

// openAERControl opens the guest's serial port to the injector in raw
// mode without echo (busybox's stty), so that lines pass unchanged.
func openAERControl(tty string) (*aerControl, error) {
	if out, err := exec.Command("stty", "-F", tty, "raw", "-echo").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("stty %s: %w: %s", tty, err, out)
	}
	f, err := os.OpenFile(tty, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &aerControl{f: f, r: bufio.NewReader(f)}, nil
}

// inject asks the host to run cmd on qemu's monitor and returns the
// monitor's answer.
func (c *aerControl) inject(cmd string) (string, error) {
	if _, err := fmt.Fprintf(c.f, "%s\n", cmd); err != nil {
		return "", err
	}
	// A host that never answers fails the test here rather than at the
	// boot's timeout.
	if err := c.f.SetReadDeadline(time.Now().Add(time.Minute)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the injector's answer: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// Close closes the serial port.
func (c *aerControl) Close() error { return c.f.Close() }

// setConfigBits sets bits in the 16-bit register at off of the config
// space of the PCI function in dir through its sysfs config file (root
// only), and reads the register back: it returns the value before and the
// value read after, which lacks bits the device does not let software
// write.
func setConfigBits(dir string, off int64, bits uint16) (before, after uint16, err error) {
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_RDWR, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var b [2]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return 0, 0, fmt.Errorf("reading %s config at %#x: %w", dir, off, err)
	}
	before = binary.LittleEndian.Uint16(b[:])
	binary.LittleEndian.PutUint16(b[:], before|bits)
	if _, err := f.WriteAt(b[:], off); err != nil {
		return 0, 0, fmt.Errorf("writing %s config at %#x: %w", dir, off, err)
	}
	if _, err := f.ReadAt(b[:], off); err != nil {
		return 0, 0, fmt.Errorf("reading %s config at %#x: %w", dir, off, err)
	}
	return before, binary.LittleEndian.Uint16(b[:]), nil
}

// aerInjectCorrectable has the kernel's aer_inject module (CONFIG_PCIEAER_INJECT)
// simulate a correctable error with the status bits cor on the PCI
// function at addr (domain:bus:device.function): it writes a struct
// aer_error_inj (drivers/pci/pcie/aer_inject.c: bus, dev, fn as bytes,
// then seven 32-bit words: uncor_status, cor_status, four header log
// words, domain; 32 bytes with the C padding) to /dev/aer_inject.
func aerInjectCorrectable(addr string, cor uint32) error {
	var domain, bus, dev, fn uint32
	if _, err := fmt.Sscanf(addr, "%x:%x:%x.%x", &domain, &bus, &dev, &fn); err != nil {
		return fmt.Errorf("PCI address %q: %w", addr, err)
	}
	var b [32]byte
	b[0], b[1], b[2] = byte(bus), byte(dev), byte(fn)
	binary.LittleEndian.PutUint32(b[8:], cor)
	binary.LittleEndian.PutUint32(b[28:], domain)
	f, err := os.OpenFile("/dev/aer_inject", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(b[:]); err != nil {
		return fmt.Errorf("writing /dev/aer_inject: %w", err)
	}
	return nil
}

// pcieDevCtl reads the PCIe Device Control register of the PCI function
// in dir from its config space: the PCI Express capability (id 0x10) is
// found by walking the capability list from offset 0x34, and Device
// Control is at its offset 8.
func pcieDevCtl(dir string) (uint16, error) {
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil {
		return 0, err
	}
	if len(cfg) < 0x40 || cfg[0x06]&0x10 == 0 {
		return 0, fmt.Errorf("%s: no capability list", dir)
	}
	for ptr, n := int(cfg[0x34]&^3), 0; ptr != 0 && n < 48; n++ {
		if ptr+2 > len(cfg) {
			return 0, fmt.Errorf("%s: capability pointer %#x outside config space", dir, ptr)
		}
		if cfg[ptr] == 0x10 {
			if ptr+10 > len(cfg) {
				return 0, fmt.Errorf("%s: PCIe capability at %#x cut", dir, ptr)
			}
			return binary.LittleEndian.Uint16(cfg[ptr+8:]), nil
		}
		ptr = int(cfg[ptr+1] &^ 3)
	}
	return 0, fmt.Errorf("%s: no PCI Express capability", dir)
}
