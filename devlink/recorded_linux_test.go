//go:build linux

package devlink

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/genetlink"
	"golang.org/x/sys/unix"
)

// recorded reads the generic netlink payloads that Debian's kernel sent
// for one request (testdata/netdevsim-6.1, recorded by TestKernel with
// NIC_EXPORTER_DEVLINK_RECORD=1).
func recorded(t testing.TB, name string) []genetlink.Message {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "netdevsim-6.1", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []genetlink.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmdS, hexS, ok := strings.Cut(line, " ")
		cmd, err := strconv.ParseUint(cmdS, 10, 8)
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q", name, line)
		}
		b, err := hex.DecodeString(hexS)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, genetlink.Message{Header: genetlink.Header{Command: uint8(cmd), Version: 1}, Data: b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no messages", name)
	}
	return out
}

// TestRecordedReplies decodes what a real kernel sent: netdevsim10 and
// netdevsim11 with one port each, and one break of netdevsim10's dummy
// reporter.
func TestRecordedReplies(t *testing.T) {
	nsim10, nsim11 := Handle{"netdevsim", "netdevsim10"}, Handle{"netdevsim", "netdevsim11"}

	var devs []Device
	for _, m := range recorded(t, "devices") {
		d, err := parseDevice(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	if diff := cmp.Diff([]Device{{nsim10}, {nsim11}}, devs); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}

	for _, m := range recorded(t, "ports") {
		p, err := parsePort(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if p.Index != 0 || p.Type == nil || *p.Type != PortTypeEth || p.Netdev == "" || p.Ifindex == 0 || p.Flavour == nil || *p.Flavour != unix.DEVLINK_PORT_FLAVOUR_PHYSICAL {
			t.Errorf("port %+v, want physical eth port 0 with a netdev", p)
		}
	}

	info, err := parseInfo(recorded(t, "info")[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	wantInfo := Info{Handle: nsim10, Driver: "netdevsim", Running: []Version{{"fw.mgmt", "10.20.30"}}, Stored: []Version{{"fw.mgmt", "10.20.30"}}}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}

	healthy, zero, on, noGrace := HealthStateHealthy, uint64(0), true, time.Duration(0)
	var reps []HealthReporter
	for _, m := range recorded(t, "reporters") {
		r, err := parseReporter(m.Data, kernelClock{})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	var want []HealthReporter
	for _, h := range []Handle{nsim10, nsim11} {
		want = append(want,
			HealthReporter{ReporterID: ReporterID{Handle: h, Name: "empty"}, State: &healthy, ErrorCount: &zero, RecoverCount: &zero, AutoDump: &on},
			HealthReporter{ReporterID: ReporterID{Handle: h, Name: "dummy"}, State: &healthy, ErrorCount: &zero, RecoverCount: &zero, AutoDump: &on, AutoRecover: &on, GracefulPeriod: &noGrace})
	}
	if diff := cmp.Diff(want, reps); diff != "" {
		t.Errorf("reporters (-want +got):\n%s", diff)
	}

	for _, name := range []string{"diagnose", "dump"} {
		var payloads [][]byte
		for _, m := range recorded(t, name) {
			payloads = append(payloads, m.Data)
		}
		o, err := decodeFmsg(payloads)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var names []string
		for _, f := range o {
			names = append(names, f.Name)
		}
		wantNames := []string{"test_bool", "test_u8", "test_u32", "test_u64", "test_string", "test_binary", "test_nest", "test_u32_array", "test_array_of_objects"}
		if diff := cmp.Diff(wantNames, names); diff != "" {
			t.Errorf("%s fields (-want +got):\n%s", name, diff)
		}
		if v, _ := o.Get("test_u32_array"); len(v.(Array)) != 10 {
			t.Errorf("%s: test_u32_array = %v", name, v)
		}
	}

	// One break with auto-recover: an error notification, then healthy.
	var states []string
	for _, m := range recorded(t, "events") {
		ev, ok := decodeEvent(m, kernelClock{})
		if !ok || ev.Kind != EventHealth || ev.Reporter.ReporterID != (ReporterID{Handle: nsim10, Name: "dummy"}) {
			t.Fatalf("event %+v, %v", ev, ok)
		}
		r := ev.Reporter
		states = append(states, r.State.String()+" "+strconv.FormatUint(*r.ErrorCount, 10)+" "+strconv.FormatUint(*r.RecoverCount, 10))
	}
	if diff := cmp.Diff([]string{"error 1 0", "healthy 1 1"}, states); diff != "" {
		t.Errorf("notifications (state, errors, recoveries) (-want +got):\n%s", diff)
	}
}
