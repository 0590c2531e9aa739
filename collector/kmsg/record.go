package kmsg

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/errclass"
)

// kmsgRecord is one record of /dev/kmsg (Documentation/ABI/testing/
// dev-kmsg): a header "priority,sequence,timestamp,flags[,...]", a ';',
// the message, a newline, then dictionary lines " KEY=value" that carry
// the device the message is about (SUBSYSTEM=pci, DEVICE=+pci:0000:08:00.0).
type kmsgRecord struct {
	// Level is the syslog level, 0 (emergency) to 7 (debug).
	Level int
	// Facility is the syslog facility; 0 is the kernel, 1 user space
	// writers of /dev/kmsg.
	Facility int
	// Seq is the record's sequence number. A gap means records were
	// overwritten before they were read.
	Seq uint64
	// Since is the time since boot at which the record was stored.
	Since time.Duration
	// Flag is '-' for a whole record; older kernels mark the first
	// fragment of a continued line 'c' and later fragments '+'.
	Flag byte
	// Message is the text with the kernel's \xNN escaping left in place.
	Message string
	// Subsystem and Device are the SUBSYSTEM= and DEVICE= dictionary
	// values, empty if absent.
	Subsystem, Device string
}

// parseKmsgRecord parses one record as read(2) returns it from /dev/kmsg.
func parseKmsgRecord(b []byte) (kmsgRecord, error) {
	var r kmsgRecord
	semi := bytes.IndexByte(b, ';')
	if semi < 0 {
		return r, fmt.Errorf("kmsg record without ';': %w", errclass.ErrParse)
	}
	head := b[:semi]
	fields := bytes.SplitN(head, []byte{','}, 5)
	if len(fields) < 3 {
		return r, fmt.Errorf("kmsg record header %q has fewer than 3 fields: %w", head, errclass.ErrParse)
	}
	prio, err := strconv.ParseUint(string(fields[0]), 10, 32)
	if err != nil {
		return r, fmt.Errorf("kmsg record priority %q: %w", fields[0], errclass.ErrParse)
	}
	r.Level, r.Facility = int(prio&7), int(prio>>3)
	if r.Seq, err = strconv.ParseUint(string(fields[1]), 10, 64); err != nil {
		return r, fmt.Errorf("kmsg record sequence %q: %w", fields[1], errclass.ErrParse)
	}
	usec, err := strconv.ParseUint(string(fields[2]), 10, 63)
	if err != nil || usec > uint64(1<<63-1)/uint64(time.Microsecond) {
		return r, fmt.Errorf("kmsg record timestamp %q: %w", fields[2], errclass.ErrParse)
	}
	r.Since = time.Duration(usec) * time.Microsecond
	r.Flag = '-'
	if len(fields) > 3 && len(fields[3]) > 0 {
		r.Flag = fields[3][0]
	}
	rest := b[semi+1:]
	msg, dict, _ := bytes.Cut(rest, []byte{'\n'})
	r.Message = string(msg)
	for len(dict) > 0 {
		var line []byte
		line, dict, _ = bytes.Cut(dict, []byte{'\n'})
		if len(line) == 0 || line[0] != ' ' {
			continue
		}
		key, val, ok := bytes.Cut(line[1:], []byte{'='})
		if !ok {
			continue
		}
		switch string(key) {
		case "SUBSYSTEM":
			r.Subsystem = string(val)
		case "DEVICE":
			r.Device = string(val)
		}
	}
	return r, nil
}

// pciFromDict returns the PCI address of a DEVICE=+pci:<address> value.
func pciFromDict(dev string) string {
	const p = "+pci:"
	if len(dev) > len(p) && dev[:len(p)] == p {
		return dev[len(p):]
	}
	return ""
}
