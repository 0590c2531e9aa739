package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// vmaLogFaults are the lines the reference host's VMA application writes
// to its VMA_LOG_FILE when a fault is active. Texts from libvma's sources
// (see internal/logrules/builtin.go).
var vmaLogFaults = []logLines{
	{fault: "vma_no_buffers", every: 30 * time.Second, lines: []string{
		"VMA WARNING: cqm[0x1c3e0a0]:207:request_more_buffers() WARNING Out of mem_buf_desc from Rx buffer pool for qp_mgr qp_mgr initialization (qp=0x1c41b00),",
	}},
	{fault: "vma_hugepages", owned: true,
		help: "the VMA application finds no huge pages and logs the warning to its VMA_LOG_FILE",
		lines: []string{
			"VMA WARNING: ***************************************************************",
			"VMA WARNING: * NO IMMEDIATE ACTION NEEDED!",
			"VMA WARNING: * Not enough hugepage resources for VMA memory allocation.    ",
			"VMA WARNING: * VMA will continue working with regular memory allocation.",
			"VMA WARNING: ***************************************************************",
		}},
	{fault: "vma_daemon_down", owned: true,
		help: "the VMA application cannot reach vmad and logs it to its VMA_LOG_FILE",
		lines: []string{
			"VMA WARNING: ***************************************************************",
			"VMA WARNING: * Can not establish connection with the daemon (vmad).      *",
			"VMA WARNING: * Look in VMA's user manual how to start the daemon.        *",
			"VMA WARNING: ***************************************************************",
		}},
}

// vmaBanner is what libvma prints when the application starts.
var vmaBanner = []string{
	"VMA INFO: ---------------------------------------------------------------------------",
	"VMA INFO: VMA_VERSION: 9.8.84-1 Release built on Oct  1 2024 12:00:00",
	"VMA INFO: Cmd Line: ./md_feed --feed 239.1.1.1",
	"VMA INFO: Current Time: Thu Nov 21 00:00:00 2024",
	"VMA INFO: Pid: 4242",
	"VMA INFO: ---------------------------------------------------------------------------",
}

var applogPart = part{faults: faultsHelp(vmaLogFaults), update: (*Host).updateApplog}

// VMALogGlob returns the glob of the demo VMA application's log files.
func (h *Host) VMALogGlob() string { return filepath.Join(h.dir, "log", "vma", "*.log") }

// Dir returns the demo host's temporary directory, a prefix of every path
// it hands out.
func (h *Host) Dir() string { return h.dir }

func (h *Host) vmaLogPath() string { return filepath.Join(h.dir, "log", "vma", "md_feed-4242.log") }

func (h *Host) updateApplog() error {
	path := h.vmaLogPath()
	var out []string
	if h.vmaPrinted == nil {
		h.vmaPrinted = make(map[string]int)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("demo VMA log directory: %w", err)
		}
		out = append(out, vmaBanner...)
	}
	emit(h, vmaLogFaults, h.vmaPrinted, func(line string) { out = append(out, line) })
	if len(out) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("demo VMA log: %w", err)
	}
	for _, l := range out {
		if _, err := f.WriteString(l + "\n"); err != nil {
			f.Close()
			return fmt.Errorf("demo VMA log: %w", err)
		}
	}
	return f.Close()
}
