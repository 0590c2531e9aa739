package demo

import (
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
)

// demoUptime is how long the demo host has been up when the exporter
// starts; it matches the counter base of the netdev part.
const demoUptime = 24 * time.Hour

// logLines are the documented log lines a fault makes the drivers or
// applications print. Faults marked owned are defined here; the others
// belong to other parts of the demo host (or later ones), and their lines
// are printed whenever a part has scheduled them, so a fault named here
// but not yet known to the demo host cannot break ParseFaults.
type logLines struct {
	fault string
	owned bool
	help  string
	// every repeats the lines while the fault lasts; zero prints them once
	// per activation.
	every time.Duration
	lines []string
}

// kmsgFaults are the kernel log lines of faults. The texts are the
// drivers' format strings (see internal/logrules/builtin.go for the
// source of each) filled in for the reference host's devices: the
// ConnectX-7 ports 0000:08:00.0 (InfiniBand) and 0000:08:00.1
// (enp8s0f1np1), and the ENA interface ens5 at 0000:00:05.0.
var kmsgFaults = []logLines{
	{fault: "fw_fatal", lines: []string{
		"3|mlx5_core 0000:08:00.1: poll_health:780:(pid 0): Fatal error 5 detected",
		"3|mlx5_core 0000:08:00.1: print_health_info:424:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:",
		"3|mlx5_core 0000:08:00.1: print_health_info:433:(pid 0): synd 0x1: firmware internal error",
		"4|mlx5_core 0000:08:00.1: mlx5_health_try_recover:324:(pid 1021): handling bad device here",
	}},
	{fault: "wd_expired", lines: []string{
		"3|ena 0000:00:05.0 ens5: Keep alive watchdog timeout.",
		"3|ena 0000:00:05.0 ens5: Trigger reset is on",
		"3|ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.8.0g",
	}},
	{fault: "pcie_degraded", lines: []string{
		"6|mlx5_core 0000:08:00.1: 252.056 Gb/s available PCIe bandwidth, limited by 32.0 GT/s PCIe x8 link at 0000:00:01.1 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)",
	}},
	{fault: "link_down", lines: []string{
		"6|mlx5_core 0000:08:00.1 enp8s0f1np1: Link down",
	}},
	{fault: "link_flap", every: 10 * time.Second, lines: []string{
		"6|mlx5_core 0000:08:00.1 enp8s0f1np1: Link down",
		"6|mlx5_core 0000:08:00.1 enp8s0f1np1: Link up",
	}},
	{fault: "mlx5_cmd_timeout", owned: true, every: time.Minute,
		help: "mlx5_core logs a firmware command timeout (ACCESS_REG) on 0000:08:00.0 every minute",
		lines: []string{
			"4|mlx5_core 0000:08:00.0: wait_func_handle_exec_timeout:1159:(pid 72061): cmd[0]: ACCESS_REG(0x805) No done completion",
			"3|mlx5_core 0000:08:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource",
		}},
	{fault: "mlx5_cq_overrun", owned: true, every: 30 * time.Second,
		help: "mlx5_core reports a CQ overrun (CQ error syndrome 0x1) on 0000:08:00.0 every 30 s",
		lines: []string{
			"4|mlx5_core 0000:08:00.0: cq_err_event_notifier:517:(pid 0): CQ error on CQN 0x487, syndrome 0x1",
		}},
	{fault: "mlx5_module_error", owned: true,
		help: "the ConnectX-7 Ethernet port's transceiver reports a high-temperature module error",
		lines: []string{
			"3|mlx5_core 0000:08:00.1: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 1, Cable error, High Temperature",
		}},
	{fault: "pcie_aer", owned: true,
		help: "the ConnectX-7 Ethernet function 0000:08:00.1 reports an uncorrectable (non-fatal) PCIe error: a completion timeout, " +
			"logged and counted in its aer_dev_nonfatal",
		lines: []string{
			"3|pcieport 0000:00:01.1: AER: Uncorrectable (Non-Fatal) error message received from 0000:08:00.1",
			"3|mlx5_core 0000:08:00.1: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)",
			"3|mlx5_core 0000:08:00.1:   device [15b3:1021] error status/mask=00004000/00000000",
			"3|mlx5_core 0000:08:00.1:    [14] CmpltTO                (First)",
		}},
	// The netdev part's pcie_aer_corrected (aer.go): one report per burst
	// of corrected errors, as the AER driver prints for several ERR_COR
	// messages it handles at once.
	{fault: "pcie_aer_corrected", every: aerCorrectedEvery, lines: []string{
		"4|pcieport 0000:00:01.1: AER: Multiple Corrected error message received from 0000:08:00.1",
		"4|mlx5_core 0000:08:00.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
		"4|mlx5_core 0000:08:00.1:   device [15b3:1021] error status/mask=00000001/00000000",
		"4|mlx5_core 0000:08:00.1:    [ 0] RxErr                  (First)",
	}},
	{fault: "ena_reg_read_timeout", owned: true,
		help: "the ENA device stops answering register reads; the driver resets it",
		lines: []string{
			"3|ena 0000:00:05.0 ens5: Reading reg failed for timeout. expected: req id[1] offset[88] actual: req id[57006] offset[0]",
			"3|ena 0000:00:05.0 ens5: Reg read32 timeout occurred",
			"3|ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.8.0g",
		}},
}

// bootLines are records the reference host's drivers print when they load
// (none of them matches a rule); the firmware version is the card's.
var bootLines = []string{
	"6|mlx5_core " + cx7.functions[0] + ": firmware version: " + cx7.firmware,
	"6|mlx5_core 0000:08:00.0: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)",
	"6|mlx5_core " + cx7.functions[1] + ": firmware version: " + cx7.firmware,
	"6|mlx5_core 0000:08:00.1: 504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)",
	"6|ena 0000:00:05.0: Elastic Network Adapter (ENA) v2.8.0g",
	"6|ena 0000:00:05.0: ENA device version: 0.10",
}

func faultsHelp(table []logLines) map[string]string {
	out := make(map[string]string)
	for _, l := range table {
		if l.owned {
			out[l.fault] = l.help
		}
	}
	return out
}

var kmsgPart = part{faults: faultsHelp(kmsgFaults), update: (*Host).updateKmsg}

// kernelLog is the demo host's kernel ring buffer.
type kernelLog struct {
	mu      sync.Mutex
	cond    *sync.Cond
	records []string // formatted as /dev/kmsg returns them
	printed map[string]int
}

func newKernelLog() *kernelLog {
	l := &kernelLog{printed: make(map[string]int)}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// printk appends a record "level|message" at time since boot.
func (l *kernelLog) printk(line string, since time.Duration) {
	level, msg := "6", line
	if len(line) > 2 && line[1] == '|' {
		level, msg = line[:1], line[2:]
	}
	l.mu.Lock()
	seq := len(l.records)
	l.records = append(l.records, fmt.Sprintf("%s,%d,%d,-;%s\n", level, seq, since.Microseconds(), msg))
	l.mu.Unlock()
	l.cond.Broadcast()
}

// emit prints the lines of every active fault in table that are due.
// printed counts the emissions per fault; the lines of a fault are printed
// once when it starts (and every "every" while it lasts).
func emit(h *Host, table []logLines, printed map[string]int, print func(string)) {
	for _, f := range table {
		if !h.Active(f.fault) {
			continue
		}
		due := 1
		if f.every > 0 {
			due += int(h.ActiveFor(f.fault) / f.every)
		}
		for printed[f.fault] < due {
			for _, line := range f.lines {
				print(line)
			}
			printed[f.fault]++
		}
	}
}

func (h *Host) updateKmsg() error {
	l := h.klog
	l.mu.Lock()
	if len(l.records) == 0 {
		l.mu.Unlock()
		for i, line := range bootLines {
			l.printk(line, 5*time.Second+time.Duration(i)*time.Millisecond)
		}
		l.mu.Lock()
	}
	printed := l.printed
	l.mu.Unlock()
	for _, e := range kmsgDue(h, kmsgFaults, printed) {
		for _, line := range e.lines {
			l.printk(line, demoUptime+e.at)
		}
	}
	return nil
}

// emission is one printing of a fault's log lines at demo time at.
type emission struct {
	at    time.Duration
	lines []string
}

// kmsgDue returns the printings of table's faults that are due by the
// demo clock and not yet in printed, in the order of their times: each
// scheduled fault prints its lines when it starts, and every "every" from
// then while it lasts. Each printing carries the time it was due, not the
// time of the update that finds it, so a demo host started late (a
// restarted exporter with Config.Start) writes the same records, with the
// same timestamps, as one that ran all along. printed counts the printings
// per schedule entry and table row.
func kmsgDue(h *Host, table []logLines, printed map[string]int) []emission {
	t := h.Elapsed()
	var out []emission
	for i, f := range h.faults {
		if t < f.Start {
			continue
		}
		span := t - f.Start
		if f.End != 0 && f.End < t {
			span = f.End - f.Start
		}
		for j, row := range table {
			if row.fault != f.Name {
				continue
			}
			due := 1
			if row.every > 0 {
				due += int(span / row.every)
			}
			key := fmt.Sprintf("%d/%d", i, j)
			for k := printed[key]; k < due; k++ {
				out = append(out, emission{at: f.Start + time.Duration(k)*row.every, lines: row.lines})
			}
			printed[key] = due
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].at < out[b].at })
	return out
}

// BootTime is the wall-clock time the demo host's kernel log timestamps
// count from. With a frozen clock it is a fixed date so output is
// reproducible.
func (h *Host) BootTime() time.Time {
	return h.Start().Add(-demoUptime)
}

// KmsgReader reads the demo host's kernel log the way /dev/kmsg is read:
// one record per Read, blocking at the end until Close.
type KmsgReader struct {
	log    *kernelLog
	pos    int
	closed bool
}

// OpenKmsg opens the demo host's kernel log at its oldest record.
func (h *Host) OpenKmsg() (*KmsgReader, error) {
	return &KmsgReader{log: h.klog}, nil
}

// Read implements kmsg.Device.
func (r *KmsgReader) Read(p []byte) (int, error) {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	for !r.closed && r.pos >= len(l.records) {
		l.cond.Wait()
	}
	if r.closed {
		return 0, os.ErrClosed
	}
	rec := l.records[r.pos]
	if len(p) < len(rec) {
		return 0, &fs.PathError{Op: "read", Path: "demo kmsg", Err: syscall.EINVAL}
	}
	r.pos++
	return copy(p, rec), nil
}

// Pending implements kmsg.Device.
func (r *KmsgReader) Pending() (bool, error) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.pos < len(r.log.records), nil
}

// SeekEnd implements kmsg.Device.
func (r *KmsgReader) SeekEnd() error {
	r.log.mu.Lock()
	r.pos = len(r.log.records)
	r.log.mu.Unlock()
	return nil
}

// Close implements kmsg.Device.
func (r *KmsgReader) Close() error {
	r.log.mu.Lock()
	r.closed = true
	r.log.mu.Unlock()
	r.log.cond.Broadcast()
	return nil
}
