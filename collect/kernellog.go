package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/nic-exporter/nic_exporter/collector/kmsg"
	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// maxKmsgRecords bounds the records read from the kernel log: the ring
// buffer of a large host holds a few tens of thousands.
const maxKmsgRecords = 1 << 20

// nicLogWords are the driver and subsystem names whose kernel log lines
// a bundle keeps besides the lines the log rules match: the NIC and RDMA
// drivers the exporter knows and PCIe error reporting.
var nicLogWords = []string{"mlx5_core", "mlx5_ib", "mlx4_core", "mlx4_en", "ena ", "efa ", "infiniband ", "ib_core", "ib_mad", "ib_ipoib",
	"rdma_rxe", "irdma", "pcieport", "AER:", "PCIe Bus Error", "DMAR", "iommu"}

// nicLine reports whether a kernel log message belongs in the bundle.
func nicLine(rules *logrules.Engine, msg string) bool {
	if _, ok := rules.Match(msg); ok {
		return true
	}
	for _, w := range nicLogWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// kernelLog writes dmesg_nic.txt: the NIC lines of the kernel log's ring
// buffer as dmesg prints them ([seconds.micros] message), read from
// /dev/kmsg without blocking.
func (c *collector) kernelLog(ctx context.Context) {
	if c.src.Kmsg == nil {
		return
	}
	rules, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		c.b.unreadableErr("kernel log rules", err)
		return
	}
	dev, err := c.src.Kmsg()
	if err != nil {
		c.b.unreadableErr("/dev/kmsg", err)
		return
	}
	defer dev.Close()
	var out bytes.Buffer
	buf := make([]byte, 8192)
	for n := 0; n < maxKmsgRecords && ctx.Err() == nil; n++ {
		ok, err := dev.Pending()
		if err != nil {
			c.b.unreadableErr("/dev/kmsg", err)
			break
		}
		if !ok {
			break
		}
		m, err := dev.Read(buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // overwritten while read: go on with the oldest left
		}
		if err != nil {
			c.b.unreadableErr("/dev/kmsg", err)
			break
		}
		rec, err := ParseKmsgRecord(buf[:m])
		if err != nil {
			continue
		}
		if nicLine(rules, rec.Message) {
			fmt.Fprintf(&out, "[%5d.%06d] %s\n", rec.Micros/1e6, rec.Micros%1e6, rec.Message)
		}
		if out.Len() > c.cfg.Limits.MaxFileSize {
			break
		}
	}
	c.b.add("dmesg_nic.txt", "dmesg | grep NIC drivers, RDMA, PCIe AER and every line the kernel log rules match (/dev/kmsg)", out.Bytes())
}

// KmsgRecord is one record of /dev/kmsg.
type KmsgRecord struct {
	Priority int
	Seq      uint64
	// Micros is the record's CLOCK_MONOTONIC timestamp in microseconds.
	Micros  uint64
	Message string
}

// ParseKmsgRecord parses one /dev/kmsg record: "PRI,SEQ,USEC,FLAGS;MESSAGE"
// then optional continuation lines (" KEY=VALUE") that are not kept
// (Documentation/ABI/testing/dev-kmsg). It is a few lines of splitting,
// not worth a dependency; the kmsg collector's own reader serves its
// collector's state and is not exported.
func ParseKmsgRecord(rec []byte) (KmsgRecord, error) {
	head, msg, ok := bytes.Cut(rec, []byte{';'})
	if !ok {
		return KmsgRecord{}, errors.New("kmsg record without ';'")
	}
	f := strings.Split(string(head), ",")
	if len(f) < 4 {
		return KmsgRecord{}, fmt.Errorf("kmsg record prefix %q: want PRI,SEQ,USEC,FLAGS", head)
	}
	pri, err := strconv.Atoi(f[0])
	if err != nil || pri < 0 {
		return KmsgRecord{}, fmt.Errorf("kmsg record priority %q", f[0])
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return KmsgRecord{}, fmt.Errorf("kmsg record sequence %q", f[1])
	}
	us, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return KmsgRecord{}, fmt.Errorf("kmsg record timestamp %q", f[2])
	}
	if i := bytes.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return KmsgRecord{Priority: pri, Seq: seq, Micros: us, Message: string(msg)}, nil
}

// journal writes journal_nic.txt: the NIC lines of this boot's kernel
// messages in the journal, which keeps what the ring buffer has
// overwritten. journalctl is the journal's only reader: its file format
// has no library here.
func (c *collector) journal(ctx context.Context) {
	if !c.src.Commands {
		return
	}
	rules, err := logrules.Compile(logrules.KernelRules())
	if err != nil {
		return
	}
	argv := []string{"journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"}
	data, err := c.run(ctx, argv...)
	if err != nil {
		c.b.unreadableErr(strings.Join(argv, " "), err)
		return
	}
	var out bytes.Buffer
	for _, l := range strings.Split(string(data), "\n") {
		if nicLine(rules, logrules.StripPrefix(l)) {
			out.WriteString(l + "\n")
		}
	}
	c.b.add("journal_nic.txt", strings.Join(argv, " ")+" | grep NIC drivers, RDMA, PCIe AER and the kernel log rules' lines", out.Bytes())
}

// lspci writes lspci.txt: lspci -vvv of each NIC function. Config space
// beyond the first 64 bytes needs root; as another user lspci prints
// "<access denied>" for the capabilities, which the manifest notes.
func (c *collector) lspci(ctx context.Context) {
	if !c.src.Commands {
		return
	}
	var out bytes.Buffer
	for _, addr := range c.nicFunctions() {
		argv := []string{"lspci", "-vvv", "-D", "-s", addr}
		data, err := c.run(ctx, argv...)
		if err != nil {
			c.b.unreadableErr(strings.Join(argv, " "), err)
			continue
		}
		if bytes.Contains(data, []byte("<access denied>")) {
			c.b.unreadable(strings.Join(argv, " "), "capabilities <access denied>: lspci reads the PCIe capability (LnkCap, LnkSta, DevSta) only as root; pci_sysfs.txt has the link speed and width")
		}
		out.Write(data)
	}
	if out.Len() > 0 {
		c.b.add("lspci.txt", "lspci -vvv -D -s FUNCTION (each NIC function)", out.Bytes())
	}
}

// run runs an external command with the command timeout and returns its
// standard output, at most MaxFileSize bytes.
func (c *collector) run(ctx context.Context, argv ...string) ([]byte, error) {
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("not installed: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, errOut := &capped{max: c.cfg.Limits.MaxFileSize}, &capped{max: 4096}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s", c.cfg.CommandTimeout)
		}
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.buf.String()))
	}
	return out.buf.Bytes(), nil
}

// capped is a writer that keeps the first max bytes and discards the
// rest.
type capped struct {
	max int
	buf bytes.Buffer
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		if len(p) > room {
			w.buf.Write(p[:room])
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)

// openDevKmsg opens /dev/kmsg as the kmsg collector does: only the
// kernel log's character device, without blocking.
func openDevKmsg() (Kmsg, error) {
	d, err := kmsg.OpenDevKmsg("/dev/kmsg")()
	if err != nil {
		return nil, err
	}
	return d, nil
}
