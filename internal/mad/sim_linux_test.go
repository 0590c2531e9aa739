package mad_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/ibsimtest"
	"github.com/nic-exporter/nic_exporter/internal/mad"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// parseDiag reads the "Name:.....value" lines perfquery and smpquery
// print.
func parseDiag(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		m[name] = strings.TrimLeft(value, ".")
	}
	return m
}

// compareFields checks every numeric field of the struct v against the
// diag line of the same name (aliases maps a field to perfquery's name
// where they differ); it returns how many fields it compared.
func compareFields(t *testing.T, what string, v any, diag map[string]string, aliases map[string]string) int {
	t.Helper()
	rv := reflect.ValueOf(v)
	n := 0
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		if a, ok := aliases[name]; ok {
			name = a
		}
		s, ok := diag[name]
		if !ok {
			continue
		}
		want, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			continue
		}
		if got := rv.Field(i).Uint(); got != want {
			t.Errorf("%s %s = %d, the diags print %d", what, name, got, want)
		}
		n++
	}
	return n
}

func dialSim(t *testing.T, f *ibsimtest.Fabric, node string) (*mad.Client, *mad.SimTransport) {
	t.Helper()
	tr, err := mad.DialSim(mad.SimConfig{SockName: f.SockName, Node: node})
	if err != nil {
		t.Fatal(err)
	}
	c := mad.NewClient(mad.ClientConfig{Transport: tr, Timeout: testenv.HangGuard}, zap.NewNop())
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	return c, tr
}

// TestSimAgainstDiags reads the same attributes with this package over
// ibsim's socket protocol and with perfquery and smpquery under
// libumad2sim, and compares every field both print.
func TestSimAgainstDiags(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	ctx := context.Background()
	c, tr := dialSim(t, f, "hca1")
	if tr.Node() != "hca1" || tr.LID() == 0 {
		t.Errorf("attached at %q with LID %d, want hca1 with the LID OpenSM gave it", tr.Node(), tr.LID())
	}

	// The neighbour of hca1 port 1, one hop by directed route.
	ni, err := c.NodeInfo(ctx, mad.DirectedRoute(1))
	if err != nil {
		t.Fatalf("%v; ibsim printed:\n%s", err, f.Output())
	}
	diag := parseDiag(f.Run(t, "hca1", "smpquery", "-D", "nodeinfo", "0,1"))
	compared := compareFields(t, "NodeInfo", ni, diag, map[string]string{
		"BaseVersion": "BaseVers", "ClassVersion": "ClassVers", "SystemImageGUID": "SystemGuid",
		"NodeGUID": "Guid", "PortGUID": "PortGuid", "PartitionCap": "PartCap", "DeviceID": "DevId",
		"LocalPortNum": "LocalPort", "VendorID": "VendorId"})
	if compared < 10 || ni.NodeType != mad.NodeTypeSwitch || ni.LocalPortNum != 1 {
		t.Errorf("NodeInfo %+v: compared %d fields, want a switch reached on its port 1", ni, compared)
	}
	desc, err := c.NodeDescription(ctx, mad.DirectedRoute(1))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.Run(t, "hca1", "smpquery", "-D", "nodedesc", "0,1")), "Node Description:")); desc != strings.TrimLeft(want, ".") || desc != "leaf1" {
		t.Errorf("NodeDescription %q, smpquery prints %q", desc, want)
	}
	pi0, err := c.PortInfo(ctx, mad.DirectedRoute(1), 0)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pi0.LID
	ls := strconv.Itoa(int(leaf))

	// Counters set from the console on leaf1 port 3, which no query
	// crosses, so they stay still between the two readings.
	for _, cmd := range []string{
		`PerformanceSet "leaf1"[3] PortCounters.SymbolErrorCounter=42`,
		`PerformanceSet "leaf1"[3] PortCounters.LinkDownedCounter=3`,
		`PerformanceSet "leaf1"[3] PortCounters.PortRcvErrors=7`,
		`PerformanceSet "leaf1"[3] PortCounters.PortXmitWait=1234`,
		`PerformanceSet "leaf1"[3] PortCounters.VL15Dropped=65535`,
		`PerformanceSet "leaf1"[3] PortCountersExtended.PortXmitData=99999999999`,
		`PerformanceSet "leaf1"[3] PortCountersExtended.PortUnicastXmitPkts=77`,
	} {
		f.Console(t, cmd)
	}
	cpi, err := c.ClassPortInfo(ctx, leaf)
	if err != nil {
		t.Fatal(err)
	}
	if cpi.CapabilityMask != 0x1300 || !cpi.HasXmitWait() || cpi.ExtendedCounters() != 8 {
		t.Errorf("ClassPortInfo %+v, ibsim's switches have CapMask 0x1300 (perfquery prints it)", cpi)
	}
	pc, err := c.PortCounters(ctx, leaf, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := f.Run(t, "hca1", "perfquery", ls, "3")
	if !strings.Contains(out, "CapMask: 0x1300") {
		t.Errorf("perfquery's capability mask differs:\n%s", out)
	}
	// perfquery's QP1Dropped line is not compared: libibmad's field table
	// gives it as {160, 16} without BITSOFFS, which is bytes 22-23, so it
	// repeats VL15Dropped (65535 here) instead of reading bytes 20-21,
	// where IBA 16.1.3.5 puts QP1Dropped (0 in ibsim, which does not set
	// IsQP1DropSupported).
	diag = parseDiag(out)
	if diag["QP1Dropped"] != diag["VL15Dropped"] {
		t.Errorf("perfquery's QP1Dropped no longer repeats VL15Dropped; compare it again:\n%s", out)
	}
	delete(diag, "QP1Dropped")
	if n := compareFields(t, "PortCounters", pc, diag, nil); n != 20 {
		t.Errorf("compared %d PortCounters fields with perfquery, want 20:\n%s", n, out)
	}
	if pc.SymbolErrorCounter != 42 || pc.PortXmitWait != 1234 || pc.VL15Dropped != 65535 {
		t.Errorf("PortCounters %+v do not hold the values set from the console", pc)
	}
	pce, err := c.PortCountersExtended(ctx, leaf, 3)
	if err != nil {
		t.Fatal(err)
	}
	out = f.Run(t, "hca1", "perfquery", "-x", ls, "3")
	if n := compareFields(t, "PortCountersExtended", pce, parseDiag(out), nil); n != 10 {
		t.Errorf("compared %d PortCountersExtended fields with perfquery -x, want 10:\n%s", n, out)
	}
	if pce.PortXmitData != 99999999999 || pce.PortUnicastXmitPkts != 77 {
		t.Errorf("PortCountersExtended %+v do not hold the values set from the console", pce)
	}
	red, err := c.PortRcvErrorDetails(ctx, leaf, 3)
	if err != nil {
		t.Fatal(err)
	}
	out = f.Run(t, "hca1", "perfquery", "-E", ls, "3")
	if n := compareFields(t, "PortRcvErrorDetails", red, parseDiag(out), map[string]string{"PortMalformedPacketErrors": "PortMalformedPktErrors"}); n != 8 {
		t.Errorf("compared %d PortRcvErrorDetails fields with perfquery -E, want 8:\n%s", n, out)
	}
	xdd, err := c.PortXmitDiscardDetails(ctx, leaf, 3)
	if err != nil {
		t.Fatal(err)
	}
	out = f.Run(t, "hca1", "perfquery", "-D", ls, "3")
	if n := compareFields(t, "PortXmitDiscardDetails", xdd, parseDiag(out), nil); n != 6 {
		t.Errorf("compared %d PortXmitDiscardDetails fields with perfquery -D, want 6:\n%s", n, out)
	}

	// PortInfo by LID of a switch port, then the port unlinked.
	pi, err := c.PortInfo(ctx, mad.LIDRoute(leaf), 3)
	if err != nil {
		t.Fatal(err)
	}
	if pi.PortState != mad.PortStateActive || pi.PhysState != 5 {
		t.Errorf("leaf1 port 3: state %d phys %d, want Active LinkUp", pi.PortState, pi.PhysState)
	}
	f.Console(t, `Unlink "leaf1"[3]`)
	pi, err = c.PortInfo(ctx, mad.LIDRoute(leaf), 3)
	if err != nil {
		t.Fatal(err)
	}
	diag = parseDiag(f.Run(t, "hca1", "smpquery", "portinfo", ls, "3"))
	if pi.PortState != mad.PortStateDown || pi.PhysState != 2 || diag["LinkState"] != "Down" || diag["PhysLinkState"] != "Polling" {
		t.Errorf("unlinked leaf1 port 3: state %d phys %d, smpquery prints %s %s; want Down (1) Polling (2)",
			pi.PortState, pi.PhysState, diag["LinkState"], diag["PhysLinkState"])
	}

	// A LID nobody has is answered at once with ETIMEDOUT; a bad
	// PortSelect with MAD status InvalidField.
	if _, err := c.PortCounters(ctx, 999, 1); !errors.Is(err, mad.ErrTimeout) {
		t.Errorf("PortCounters of LID 999: %v, want ErrTimeout", err)
	}
	var serr *mad.StatusError
	if _, err := c.PortCounters(ctx, leaf, 99); !errors.As(err, &serr) || serr.Code != 0x001c {
		t.Errorf("PortCounters of port 99: %v, want MAD status 0x001c", err)
	}
}

// TestSimSlots attaches and detaches more clients than ibsim has slots:
// Close must free each slot.
func TestSimSlots(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	for i := 0; i < 25; i++ {
		tr, err := mad.DialSim(mad.SimConfig{SockName: f.SockName, Node: "hca2"})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("detach %d: %v", i, err)
		}
	}
	if _, err := mad.DialSim(mad.SimConfig{SockName: f.SockName, Node: "nosuchnode"}); err == nil {
		t.Error("attaching at a node ibsim does not have succeeded")
	}
}

// TestSimConcurrent sends many requests at once through one client: each
// response must reach its own request.
func TestSimConcurrent(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	c, _ := dialSim(t, f, "hca5")
	ctx := context.Background()
	pi, err := c.PortInfo(ctx, mad.DirectedRoute(1), 0)
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 4; p++ {
		f.Console(t, fmt.Sprintf(`PerformanceSet "leaf2"[%d] PortCounters.SymbolErrorCounter=%d`, p, 100+p))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(port uint8) {
			defer wg.Done()
			pc, err := c.PortCounters(ctx, pi.LID, port)
			if err != nil {
				errs <- err
				return
			}
			if pc.PortSelect != port || pc.SymbolErrorCounter != 100+uint16(port) {
				errs <- fmt.Errorf("port %d answered with PortSelect %d SymbolErrorCounter %d", port, pc.PortSelect, pc.SymbolErrorCounter)
			}
		}(uint8(i%4 + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSimDiscoverSweep walks the small fabric from hca1 and sweeps every
// switch port: the switches and their up ports are those ibnetdiscover
// lists, and a counter set from the console arrives on its port.
func TestSimDiscoverSweep(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small)
	f.Console(t, `PerformanceSet "spine1"[3] PortCounters.SymbolErrorCounter=17`)
	c, _ := dialSim(t, f, "hca1")
	ctx := context.Background()
	switches, errs := mad.Discover(ctx, c, 1, mad.SweepConfig{Concurrency: 8})
	if len(errs) != 0 {
		t.Fatalf("discovery errors: %v", errs)
	}
	disc := f.Run(t, "hca1", "ibnetdiscover")
	got := map[string]int{}
	for _, sw := range switches {
		got[sw.Desc] = len(sw.Ports)
		if !strings.Contains(disc, fmt.Sprintf(`switchguid=0x%x`, sw.GUID)) || !strings.Contains(disc, fmt.Sprintf(`"%s" base port 0 lid %d`, sw.Desc, sw.LID)) {
			t.Errorf("switch %+v is not in ibnetdiscover's output", sw)
		}
	}
	if len(switches) != 3 || got["leaf1"] != 6 || got["leaf2"] != 6 || got["spine1"] != 4 {
		t.Fatalf("discovered %v, want leaf1 and leaf2 with 6 up ports and spine1 with 4", got)
	}
	readings := mad.Sweep(ctx, c, switches, mad.SweepConfig{Concurrency: 8})
	if len(readings) != 16 {
		t.Fatalf("%d readings, want 16", len(readings))
	}
	for _, r := range readings {
		if r.Err != nil {
			t.Errorf("%s port %d: %v", r.Switch.Desc, r.Port, r.Err)
			continue
		}
		want := uint16(0)
		if r.Switch.Desc == "spine1" && r.Port == 3 {
			want = 17
		}
		if r.Counters.SymbolErrorCounter != want || r.Counters.PortSelect != r.Port || r.Extended == nil {
			t.Errorf("%s port %d: SymbolErrorCounter %d PortSelect %d extended %v", r.Switch.Desc, r.Port, r.Counters.SymbolErrorCounter, r.Counters.PortSelect, r.Extended != nil)
		}
	}
}
