package fabric

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/collectortest"
	"github.com/nic-exporter/nic_exporter/internal/mad"
)

// fakeQuerier answers like one HCA port cabled to port 7 of a switch
// with the given PerfMgt capability mask; block makes every far-end query
// wait for its context instead.
type fakeQuerier struct {
	capMask uint16
	pc      mad.PortCounters
	block   bool
	closed  bool
	// resets are the CounterSelect of each reset asked; resetErr, when
	// set, is its answer.
	resets   []mad.CounterSelect
	resetErr error
}

func (f *fakeQuerier) wait(ctx context.Context) error {
	if f.block {
		<-ctx.Done()
		return mad.ErrTimeout
	}
	return nil
}

func (f *fakeQuerier) PortInfo(ctx context.Context, r mad.Route, port uint8) (mad.PortInfo, error) {
	if len(r.Path) == 0 {
		return mad.PortInfo{PortState: mad.PortStateActive, PhysState: 5}, nil
	}
	if err := f.wait(ctx); err != nil {
		return mad.PortInfo{}, err
	}
	return mad.PortInfo{LID: 9, PortState: mad.PortStateActive, PhysState: 5}, nil
}

func (f *fakeQuerier) NodeInfo(ctx context.Context, _ mad.Route) (mad.NodeInfo, error) {
	if err := f.wait(ctx); err != nil {
		return mad.NodeInfo{}, err
	}
	return mad.NodeInfo{NodeType: mad.NodeTypeSwitch, NodeGUID: 0xabc, LocalPortNum: 7, NumPorts: 36}, nil
}

func (f *fakeQuerier) NodeDescription(context.Context, mad.Route) (string, error) {
	return "sw-a", nil
}

func (f *fakeQuerier) ClassPortInfo(context.Context, uint16) (mad.ClassPortInfo, error) {
	return mad.ClassPortInfo{CapabilityMask: f.capMask}, nil
}

func (f *fakeQuerier) PortCounters(context.Context, uint16, uint8) (mad.PortCounters, error) {
	return f.pc, nil
}

func (f *fakeQuerier) PortCountersExtended(context.Context, uint16, uint8) (mad.PortCountersExtended, error) {
	return mad.PortCountersExtended{PortXmitData: 1 << 40}, nil
}

// ResetPortCounters records the reset and clears the 16- and 8-bit error
// counters it names.
func (f *fakeQuerier) ResetPortCounters(_ context.Context, _ uint16, _ uint8, sel mad.CounterSelect) (mad.PortCounters, error) {
	f.resets = append(f.resets, sel)
	if f.resetErr != nil {
		return mad.PortCounters{}, f.resetErr
	}
	if sel&mad.SelSymbolError != 0 {
		f.pc.SymbolErrorCounter = 0
	}
	if sel&mad.SelLinkErrorRecovery != 0 {
		f.pc.LinkErrorRecoveryCounter = 0
	}
	return f.pc, nil
}

func (f *fakeQuerier) Close() error { f.closed = true; return nil }

func pollOnce(t *testing.T, c *Collector, errs *collector.SourceErrors) (string, error) {
	t.Helper()
	r := collectortest.Poll(t, c, errs)
	return r.Text, r.Err
}

func opener(eps ...Endpoint) Opener {
	return func(*zap.Logger) ([]Endpoint, error) { return eps, nil }
}

// TestCapabilityMask checks that the ClassPortInfo capability mask
// decides which counters are exported: no PortXmitWait without its bit,
// and the 32-bit data counters, with saturation, without extended width.
func TestCapabilityMask(t *testing.T) {
	q := &fakeQuerier{capMask: 0, pc: mad.PortCounters{PortXmitWait: 77, PortXmitData: 0xffffffff}}
	c := New(Config{Open: opener(Endpoint{Device: "mlx5_0", Port: 1, Client: q})}, zap.NewNop())
	out, err := pollOnce(t, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	labels := `{device="mlx5_0",port="1",remote_guid="0x0000000000000abc",remote_node="sw-a",remote_port="7"`
	if strings.Contains(out, "xmit_wait") {
		t.Errorf("PortXmitWait exported without its capability bit:\n%s", out)
	}
	for _, want := range []string{
		`nic_fabric_remote_port_xmit_data_bytes_total` + labels + `} 17179869180`,
		`nic_fabric_remote_port_counters_saturated` + labels + `,counter="port_xmit_data"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "unicast") {
		t.Errorf("extended counters without extended width:\n%s", out)
	}

	q.capMask = mad.CapXmitWait | mad.CapExtendedWidthNoIETF
	c = New(Config{Open: opener(Endpoint{Device: "mlx5_0", Port: 1, Client: q})}, zap.NewNop())
	out, _ = pollOnce(t, c, nil)
	for _, want := range []string{
		`nic_fabric_remote_port_xmit_wait_total` + labels + `} 77`,
		`nic_fabric_remote_port_xmit_data_bytes_total` + labels + `} 4398046511104`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, `counter="port_xmit_data"`) || strings.Contains(out, "unicast") {
		t.Errorf("NoIETF extended width: data counters must be 64-bit and unicast/multicast absent:\n%s", out)
	}
}

// TestMADTimeout checks that far ends that never answer cost each poll
// only the per-MAD timeout, are counted as source errors, and leave the
// other ports' series alone.
func TestMADTimeout(t *testing.T) {
	slow := &fakeQuerier{block: true}
	fast := &fakeQuerier{capMask: mad.CapXmitWait}
	errs := collector.NewSourceErrors(zap.NewNop(), time.Hour)
	c := New(Config{
		Open:       opener(Endpoint{Device: "mlx5_0", Port: 1, Client: slow}, Endpoint{Device: "mlx5_1", Port: 1, Client: fast}),
		MADTimeout: time.Millisecond,
	}, zap.NewNop())
	out, err := pollOnce(t, c, errs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `nic_fabric_remote_up{device="mlx5_0",port="1"} 0`) || !strings.Contains(out, `nic_fabric_remote_up{device="mlx5_1",port="1"} 1`) {
		t.Errorf("one silent far end must not hide the other:\n%s", out)
	}
	var n uint64
	for _, rc := range errs.Counts() {
		n += rc.Count
	}
	if n != 1 {
		t.Errorf("%d source errors, want 1 (the NodeInfo that timed out)", n)
	}
	if err := c.Close(); err != nil || !slow.closed || !fast.closed {
		t.Errorf("Close: %v, closed %v %v", err, slow.closed, fast.closed)
	}
}

// TestFilterAndNoSource checks the device filter (an excluded device gets
// no MAD) and that an opener without a source makes the poll report
// collector.ErrNoSource.
func TestFilterAndNoSource(t *testing.T) {
	excluded := &fakeQuerier{block: true}
	f, err := collector.NewNameFilter("collector.fabric.device", "", "mlx5_1")
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Open: opener(Endpoint{Device: "mlx5_0", Port: 1, Client: &fakeQuerier{}}, Endpoint{Device: "mlx5_1", Port: 1, Client: excluded}), Filter: f, MADTimeout: time.Hour}, zap.NewNop())
	out, err := pollOnce(t, c, nil)
	if err != nil || strings.Contains(out, "mlx5_1") {
		t.Errorf("excluded device: %v\n%s", err, out)
	}
	none := New(Config{Open: UmadOpener(t.TempDir(), "/dev/infiniband", time.Second)}, zap.NewNop())
	if _, err := pollOnce(t, none, nil); !errors.Is(err, collector.ErrNoSource) {
		t.Errorf("no class/infiniband_mad: %v, want ErrNoSource", err)
	}
}

// TestKeepKnownPorts checks that a rediscovery keeps reading the ports an
// earlier discovery found up (they show Down instead of vanishing), adds
// nothing to a switch seen for the first time, and keeps port order.
func TestKeepKnownPorts(t *testing.T) {
	port := func(n uint8) mad.SwitchPort { return mad.SwitchPort{Num: n, State: 4} }
	old := []mad.Switch{{GUID: 1, Ports: []mad.SwitchPort{port(1), port(2), port(36)}}, {GUID: 3, Ports: []mad.SwitchPort{port(5)}}}
	found := []mad.Switch{{GUID: 1, Ports: []mad.SwitchPort{port(2), port(3)}}, {GUID: 2, Ports: []mad.SwitchPort{port(7)}}}
	got := keepKnownPorts(found, old)
	nums := func(sw mad.Switch) []uint8 {
		var out []uint8
		for _, p := range sw.Ports {
			out = append(out, p.Num)
		}
		return out
	}
	if g := nums(got[0]); !slices.Equal(g, []uint8{1, 2, 3, 36}) {
		t.Errorf("switch 1 ports %v, want [1 2 3 36]", g)
	}
	if g := nums(got[1]); !slices.Equal(g, []uint8{7}) {
		t.Errorf("switch 2 ports %v, want [7]", g)
	}
	if len(got) != 2 {
		t.Errorf("%d switches, want the 2 found (a switch no longer found is not kept)", len(got))
	}
}

// TestResetSaturated checks the opt-in reset of saturated counters: off,
// nothing is reset and no reset series is exported; on, exactly the
// counters stuck at their maximum are reset, at most once per port per
// ResetInterval, a failed reset is a source error tried again at the next
// poll, and the count of resets is exported.
func TestResetSaturated(t *testing.T) {
	labels := `{device="mlx5_0",port="1",remote_guid="0x0000000000000abc",remote_node="sw-a",remote_port="7"}`
	stuck := mad.PortCounters{SymbolErrorCounter: 0xffff, LinkErrorRecoveryCounter: 0xff, PortRcvErrors: 12}

	q := &fakeQuerier{pc: stuck}
	c := New(Config{Open: opener(Endpoint{Device: "mlx5_0", Port: 1, Client: q})}, zap.NewNop())
	out, _ := pollOnce(t, c, nil)
	if len(q.resets) != 0 || strings.Contains(out, "counter_resets") {
		t.Errorf("reset off: %d resets sent, reset series exported: %v", len(q.resets), strings.Contains(out, "counter_resets"))
	}

	q = &fakeQuerier{pc: stuck, resetErr: mad.ErrTimeout}
	errs := collector.NewSourceErrors(zap.NewNop(), 0)
	c = New(Config{Open: opener(Endpoint{Device: "mlx5_0", Port: 1, Client: q}), ResetSaturated: true, ResetInterval: time.Hour}, zap.NewNop())
	out, _ = pollOnce(t, c, errs)
	if len(q.resets) != 1 || q.resets[0] != mad.SelSymbolError|mad.SelLinkErrorRecovery {
		t.Fatalf("resets sent %v, want one of symbol_error and link_error_recovery (0x3)", q.resets)
	}
	if !strings.Contains(out, "nic_fabric_remote_port_counter_resets_total"+labels+" 0") || len(errs.Counts()) != 1 {
		t.Errorf("a failed reset: want 0 resets exported and one source error (%v):\n%s", errs.Counts(), out)
	}
	q.resetErr = nil
	out, _ = pollOnce(t, c, errs)
	if len(q.resets) != 2 || !strings.Contains(out, "nic_fabric_remote_port_counter_resets_total"+labels+" 1") {
		t.Errorf("after a failed reset the next poll resets: %d resets, output:\n%s", len(q.resets), out)
	}
	// The series of this poll are those read before the reset.
	if !strings.Contains(out, "nic_fabric_remote_port_symbol_error_total"+labels+" 65535") {
		t.Errorf("the poll that resets exports what it read before:\n%s", out)
	}
	out, _ = pollOnce(t, c, errs)
	if !strings.Contains(out, "nic_fabric_remote_port_symbol_error_total"+labels+" 0") ||
		!strings.Contains(out, `nic_fabric_remote_port_counters_saturated{device="mlx5_0",port="1",remote_guid="0x0000000000000abc",remote_node="sw-a",remote_port="7",counter="symbol_error"} 0`) {
		t.Errorf("the next poll reads the counter from zero, not saturated:\n%s", out)
	}
	// Saturated again within the hour: not reset again.
	q.pc = stuck
	out, _ = pollOnce(t, c, errs)
	if len(q.resets) != 2 || !strings.Contains(out, "nic_fabric_remote_port_counter_resets_total"+labels+" 1") {
		t.Errorf("a second reset within ResetInterval: %d resets sent", len(q.resets))
	}
}
