//go:build linux

package devlink_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
	"golang.org/x/sys/unix"
)

// recordVar, set to 1, makes TestKernel record the kernel's raw replies
// and notifications into testdata/netdevsim-6.1, the fixtures of
// TestRecordedReplies:
//
//	NIC_EXPORTER_DEVLINK_RECORD=1 go test -run TestKernel ./devlink/
const recordVar = "NIC_EXPORTER_DEVLINK_RECORD"

const recordPrefix = "RECORD "

// recordDir holds the replies of Debian's 6.1 kernel with netdevsim.
var recordDir = filepath.Join("testdata", "netdevsim-6.1")

// record runs in the guest: it sends raw requests and prints each reply's
// generic netlink payload as "RECORD <name> <hex>" lines.
func record(t *testing.T) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.GetFamily(unix.DEVLINK_GENL_NAME)
	if err != nil {
		t.Fatal(err)
	}
	dummy := func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_BUS_NAME, "netdevsim")
		ae.String(unix.DEVLINK_ATTR_DEV_NAME, "netdevsim10")
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "dummy")
	}
	handle := func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_BUS_NAME, "netdevsim")
		ae.String(unix.DEVLINK_ATTR_DEV_NAME, "netdevsim10")
	}
	emit := func(name string, msgs []genetlink.Message) {
		for _, m := range msgs {
			fmt.Printf("%s%s %d %s\n", recordPrefix, name, m.Header.Command, hex.EncodeToString(m.Data))
		}
	}
	for _, req := range []struct {
		name   string
		cmd    uint8
		flags  netlink.HeaderFlags
		encode func(*netlink.AttributeEncoder)
	}{
		{"devices", unix.DEVLINK_CMD_GET, netlink.Dump, nil},
		{"ports", unix.DEVLINK_CMD_PORT_GET, netlink.Dump, nil},
		{"info", unix.DEVLINK_CMD_INFO_GET, 0, handle},
		{"reporters", unix.DEVLINK_CMD_HEALTH_REPORTER_GET, netlink.Dump, nil},
		{"diagnose", unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, 0, dummy},
		{"dump", unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET, netlink.Dump, dummy},
	} {
		var data []byte
		if req.encode != nil {
			ae := netlink.NewAttributeEncoder()
			req.encode(ae)
			if data, err = ae.Encode(); err != nil {
				t.Fatal(err)
			}
		}
		msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: req.cmd, Version: f.Version}, Data: data}, f.ID, netlink.Request|req.flags)
		if err != nil {
			t.Fatalf("%s: %v", req.name, err)
		}
		emit(req.name, msgs)
	}

	// The notifications of one break that auto-recovers.
	ev, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	for _, g := range f.Groups {
		if g.Name == unix.DEVLINK_GENL_MCGRP_CONFIG_NAME {
			if err := ev.JoinGroup(g.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(debugfs(10, "break_health"), []byte("recorded break"), 0); err != nil {
		t.Fatal(err)
	}
	var got []genetlink.Message
	for len(got) < 2 {
		if err := ev.SetReadDeadline(time.Now().Add(testenv.HangGuard)); err != nil {
			t.Fatal(err)
		}
		msgs, _, err := ev.Receive()
		if err != nil {
			t.Fatalf("receiving notifications: %v", err)
		}
		got = append(got, msgs...)
	}
	emit("events", got)
}

// saveRecording writes the RECORD lines of the guest output to
// recordDir, one file per request with one hex message per line.
func saveRecording(out string) error {
	files := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, recordPrefix)
		if i < 0 {
			continue
		}
		fields := strings.Fields(line[i+len(recordPrefix):])
		if len(fields) != 3 {
			return fmt.Errorf("bad record line %q", line)
		}
		files[fields[0]] = append(files[fields[0]], fields[1]+" "+fields[2])
	}
	if len(files) == 0 {
		return fmt.Errorf("the guest recorded nothing")
	}
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		header := "# Generic netlink payloads (command, then hex) of Debian's kernel 6.1.0-56-amd64\n" +
			"# with netdevsim, recorded by NIC_EXPORTER_DEVLINK_RECORD=1 go test -run TestKernel ./devlink/\n"
		if err := os.WriteFile(filepath.Join(recordDir, n+".hex"), []byte(header+strings.Join(files[n], "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
