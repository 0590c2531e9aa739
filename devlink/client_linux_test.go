//go:build linux

package devlink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/devlink/devlinktest"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// testClient returns a client of a fake kernel that answers with fn.
// The test fails if the client leaves a connection open.
func testClient(t *testing.T, fn devlinktest.Func) *Client {
	t.Helper()
	k := devlinktest.NewKernel(fn)
	c, err := NewWithDial(k.Dial)
	if err != nil {
		t.Fatalf("NewWithDial: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if opened, open := k.Conns(); open != 0 {
			t.Errorf("%d of %d connections left open after Close", open, opened)
		}
	})
	return c
}

// attrs encodes attributes with fn.
func attrs(t testing.TB, fn func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func msg(cmd uint8, data []byte) genetlink.Message {
	return genetlink.Message{Header: genetlink.Header{Command: cmd, Version: 1}, Data: data}
}

// reporterAttrs encodes a health reporter message as the kernel's
// devlink_nl_health_reporter_fill does.
func reporterAttrs(bus, dev string, port *uint32, fn func(ae *netlink.AttributeEncoder)) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_BUS_NAME, bus)
		ae.String(unix.DEVLINK_ATTR_DEV_NAME, dev)
		if port != nil {
			ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, *port)
		}
		ae.Nested(unix.DEVLINK_ATTR_HEALTH_REPORTER, func(nae *netlink.AttributeEncoder) error {
			fn(nae)
			return nil
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		is    error
	}{
		{"no devlink family", unix.ENOENT, os.ErrNotExist},
		{"not permitted", unix.EPERM, os.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := genltest.Dial(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
				return nil, genltest.Error(int(tc.errno))
			})
			_, err := initClient(conn, nil, nil)
			if !errors.Is(err, tc.is) {
				t.Fatalf("initClient error %v, want one that is %v", err, tc.is)
			}
		})
	}
}

func TestHealthReporters(t *testing.T) {
	port := uint32(65535)
	// Attributes as mlx5 reporters on a ConnectX-7 report them: fw has no
	// recover callback (no graceful period, no auto-recover), fw_fatal
	// recovers with a 20 minute grace period, tx is a port reporter.
	fw := reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw")
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 0)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, 0)
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, 1)
	})
	fwFatal := reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw_fatal")
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 1)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 2)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, 1)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, 4242)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, 1_700_000_000_123_000_000)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, 1_200_000)
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, 1)
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, 1)
		ae.Bytes(unix.DEVLINK_ATTR_PAD, nil)
		ae.Bytes(0x7ff0, []byte{1, 2, 3}) // an attribute from a future kernel
	})
	tx := reporterAttrs("pci", "0000:08:00.1", &port, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "tx")
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 0)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, 0)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, 500)
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, 1)
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, 0)
	})
	lastDump := time.Unix(0, 1_700_000_000_123_000_000)
	pci0 := Handle{Bus: "pci", Device: "0000:08:00.0"}

	for _, tc := range []struct {
		name    string
		replies [][]byte
		err     error
		want    []HealthReporter
		wantErr func(error) bool
	}{
		{
			name:    "mlx5 device and port reporters",
			replies: [][]byte{attrs(t, fw), attrs(t, fwFatal), attrs(t, tx)},
			want: []HealthReporter{
				{
					ReporterID: ReporterID{Handle: pci0, Name: "fw"},
					State:      ptr(HealthStateHealthy), ErrorCount: ptr(uint64(0)), RecoverCount: ptr(uint64(0)),
					AutoDump: ptr(true),
				},
				{
					ReporterID: ReporterID{Handle: pci0, Name: "fw_fatal"},
					State:      ptr(HealthStateError), ErrorCount: ptr(uint64(2)), RecoverCount: ptr(uint64(1)),
					GracefulPeriod: ptr(20 * time.Minute), AutoRecover: ptr(true), AutoDump: ptr(true),
					LastDump: &lastDump,
				},
				{
					ReporterID: ReporterID{Handle: Handle{Bus: "pci", Device: "0000:08:00.1"}, Port: ptr(port), Name: "tx"},
					State:      ptr(HealthStateHealthy), ErrorCount: ptr(uint64(0)), RecoverCount: ptr(uint64(0)),
					GracefulPeriod: ptr(500 * time.Millisecond), AutoRecover: ptr(true), AutoDump: ptr(false),
				},
			},
		},
		{
			name: "only a name",
			replies: [][]byte{attrs(t, reporterAttrs("netdevsim", "netdevsim10", nil, func(ae *netlink.AttributeEncoder) {
				ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "empty")
			}))},
			want: []HealthReporter{{ReporterID: ReporterID{Handle: Handle{"netdevsim", "netdevsim10"}, Name: "empty"}}},
		},
		{name: "no reporters", want: []HealthReporter{}},
		{
			name: "truncated state",
			replies: [][]byte{attrs(t, reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
				ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw")
				ae.Bytes(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, nil)
			}))},
			wantErr: func(err error) bool { return err != nil },
		},
		{
			name: "counter of the wrong size",
			replies: [][]byte{attrs(t, reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
				ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw")
				ae.Uint32(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 1)
			}))},
			wantErr: func(err error) bool { return err != nil },
		},
		{
			name: "reporter without a name",
			replies: [][]byte{attrs(t, reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
				ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0)
			}))},
			wantErr: func(err error) bool { return err != nil },
		},
		{
			name: "no handle",
			replies: [][]byte{attrs(t, func(ae *netlink.AttributeEncoder) {
				ae.Nested(unix.DEVLINK_ATTR_HEALTH_REPORTER, func(nae *netlink.AttributeEncoder) error {
					nae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw")
					return nil
				})
			})},
			wantErr: func(err error) bool { return errors.Is(err, errNoHandle) },
		},
		{name: "garbage", replies: [][]byte{{0xff, 0xff, 0x01}}, wantErr: func(err error) bool { return err != nil }},
		{name: "permission denied", err: devlinktest.Errno(unix.EPERM), wantErr: func(err error) bool { return errors.Is(err, os.ErrPermission) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, genltest.CheckRequest(devlinktest.Family().ID, unix.DEVLINK_CMD_HEALTH_REPORTER_GET, netlink.Request|netlink.Dump,
				func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
					if tc.err != nil {
						return nil, tc.err
					}
					var out []genetlink.Message
					for _, r := range tc.replies {
						out = append(out, msg(unix.DEVLINK_CMD_HEALTH_REPORTER_GET, r))
					}
					return out, nil
				}))
			got, err := c.HealthReporters(context.Background())
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reporters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDevicesAndPorts(t *testing.T) {
	handle := func(ae *netlink.AttributeEncoder, dev string) {
		ae.String(unix.DEVLINK_ATTR_BUS_NAME, "pci")
		ae.String(unix.DEVLINK_ATTR_DEV_NAME, dev)
	}
	c := testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Flags&netlink.Dump == 0 {
			t.Errorf("command %d sent without the dump flag", greq.Header.Command)
		}
		switch greq.Header.Command {
		case unix.DEVLINK_CMD_GET:
			return []genetlink.Message{
				msg(unix.DEVLINK_CMD_NEW, attrs(t, func(ae *netlink.AttributeEncoder) { handle(ae, "0000:08:00.0") })),
				msg(unix.DEVLINK_CMD_NEW, attrs(t, func(ae *netlink.AttributeEncoder) { handle(ae, "0000:08:00.1") })),
			}, nil
		case unix.DEVLINK_CMD_PORT_GET:
			return []genetlink.Message{
				msg(unix.DEVLINK_CMD_PORT_NEW, attrs(t, func(ae *netlink.AttributeEncoder) {
					handle(ae, "0000:08:00.1")
					ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, 65535)
					ae.Uint16(unix.DEVLINK_ATTR_PORT_TYPE, unix.DEVLINK_PORT_TYPE_ETH)
					ae.Uint32(unix.DEVLINK_ATTR_PORT_NETDEV_IFINDEX, 4)
					ae.String(unix.DEVLINK_ATTR_PORT_NETDEV_NAME, "enp8s0f1np1")
					ae.Uint16(unix.DEVLINK_ATTR_PORT_FLAVOUR, unix.DEVLINK_PORT_FLAVOUR_PHYSICAL)
					ae.Uint32(unix.DEVLINK_ATTR_PORT_NUMBER, 1)
				})),
				msg(unix.DEVLINK_CMD_PORT_NEW, attrs(t, func(ae *netlink.AttributeEncoder) {
					handle(ae, "0000:08:00.0")
					ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, 65535)
					ae.Uint16(unix.DEVLINK_ATTR_PORT_TYPE, unix.DEVLINK_PORT_TYPE_IB)
					ae.String(unix.DEVLINK_ATTR_PORT_IBDEV_NAME, "mlx5_0")
				})),
			}, nil
		}
		t.Errorf("unexpected command %d", greq.Header.Command)
		return nil, devlinktest.Errno(unix.EOPNOTSUPP)
	})
	devs, err := c.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantDevs := []Device{{Handle{"pci", "0000:08:00.0"}}, {Handle{"pci", "0000:08:00.1"}}}
	if diff := cmp.Diff(wantDevs, devs); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	ports, err := c.Ports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantPorts := []Port{
		{Handle: Handle{"pci", "0000:08:00.1"}, Index: 65535, Type: ptr(PortTypeEth), Flavour: ptr(uint16(0)), Number: ptr(uint32(1)), Netdev: "enp8s0f1np1", Ifindex: 4},
		{Handle: Handle{"pci", "0000:08:00.0"}, Index: 65535, Type: ptr(PortTypeIB), IBDev: "mlx5_0"},
	}
	if diff := cmp.Diff(wantPorts, ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}

func TestInfo(t *testing.T) {
	h := Handle{"pci", "0000:08:00.1"}
	c := testClient(t, genltest.CheckRequest(devlinktest.Family().ID, unix.DEVLINK_CMD_INFO_GET, netlink.Request,
		func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
			if got, _, err := decodeHandle(greq.Data, nil); err != nil || got != h {
				t.Errorf("request for %v (%v), want %v", got, err, h)
			}
			version := func(ae *netlink.AttributeEncoder, typ uint16, name, value string) {
				ae.Nested(typ, func(nae *netlink.AttributeEncoder) error {
					nae.String(unix.DEVLINK_ATTR_INFO_VERSION_NAME, name)
					nae.String(unix.DEVLINK_ATTR_INFO_VERSION_VALUE, value)
					return nil
				})
			}
			// As mlx5_devlink_info_get fills it on a ConnectX-7.
			return []genetlink.Message{msg(unix.DEVLINK_CMD_INFO_GET, attrs(t, func(ae *netlink.AttributeEncoder) {
				encodeHandle(ae, h)
				ae.String(unix.DEVLINK_ATTR_INFO_DRIVER_NAME, "mlx5_core")
				ae.String(unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER, "MT2310X12345")
				version(ae, unix.DEVLINK_ATTR_INFO_VERSION_FIXED, "fw.psid", "MT_0000000838")
				version(ae, unix.DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw.version", "28.45.4028")
				version(ae, unix.DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw", "28.45.4028")
				version(ae, unix.DEVLINK_ATTR_INFO_VERSION_STORED, "fw.version", "28.45.4028")
				version(ae, unix.DEVLINK_ATTR_INFO_VERSION_STORED, "fw", "28.45.4028")
			}))}, nil
		}))
	got, err := c.Info(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{
		Handle: h, Driver: "mlx5_core", SerialNumber: "MT2310X12345",
		Fixed:   []Version{{"fw.psid", "MT_0000000838"}},
		Running: []Version{{"fw.version", "28.45.4028"}, {"fw", "28.45.4028"}},
		Stored:  []Version{{"fw.version", "28.45.4028"}, {"fw", "28.45.4028"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	if v := Lookup(got.Running, "fw.version"); v != "28.45.4028" {
		t.Errorf("Lookup fw.version = %q", v)
	}
}

// fmsgAttrs encodes an fmsg token stream in one DEVLINK_ATTR_FMSG nest.
func fmsgAttrs(tokens ...func(ae *netlink.AttributeEncoder)) func(ae *netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.DEVLINK_ATTR_FMSG, func(nae *netlink.AttributeEncoder) error {
			for _, tok := range tokens {
				tok(nae)
			}
			return nil
		})
	}
}

func flag(typ uint16) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) { ae.Flag(typ, true) }
}

var (
	objStart  = flag(unix.DEVLINK_ATTR_FMSG_OBJ_NEST_START)
	pairStart = flag(unix.DEVLINK_ATTR_FMSG_PAIR_NEST_START)
	arrStart  = flag(unix.DEVLINK_ATTR_FMSG_ARR_NEST_START)
	nestEnd   = flag(unix.DEVLINK_ATTR_FMSG_NEST_END)
)

func name(s string) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) { ae.String(unix.DEVLINK_ATTR_FMSG_OBJ_NAME, s) }
}

func value(typ uint8, data []byte) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, typ)
		ae.Bytes(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, data)
	}
}

func u32(v uint32) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, fmsgU32)
		ae.Uint32(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, v)
	}
}

func str(s string) func(*netlink.AttributeEncoder) {
	return value(fmsgNulString, append([]byte(s), 0))
}

func TestDiagnoseAndDump(t *testing.T) {
	port := uint32(65535)
	id := ReporterID{Handle: Handle{"pci", "0000:08:00.1"}, Port: &port, Name: "tx"}
	// mlx5e's tx diagnose: an array of send queues, split over two
	// messages as the kernel does when the output outgrows one.
	first := fmsgAttrs(objStart,
		pairStart, name("Common config"), objStart,
		pairStart, name("SQ"), objStart,
		pairStart, name("stride size"), u32(64), nestEnd,
		nestEnd, nestEnd, // SQ object and pair
		nestEnd, nestEnd, // "Common config" object and pair
		pairStart, name("SQs"), arrStart,
		objStart, pairStart, name("channel ix"), u32(0), nestEnd, pairStart, name("sqn"), u32(4236), nestEnd, nestEnd,
	)
	second := fmsgAttrs(
		objStart, pairStart, name("channel ix"), u32(1), nestEnd, pairStart, name("sqn"), u32(4241), nestEnd, nestEnd,
		nestEnd, nestEnd,
		pairStart, name("state"), str("ok"), nestEnd,
		nestEnd)
	want := Object{
		{"Common config", Object{{"SQ", Object{{"stride size", uint32(64)}}}}},
		{"SQs", Array{
			Object{{"channel ix", uint32(0)}, {"sqn", uint32(4236)}},
			Object{{"channel ix", uint32(1)}, {"sqn", uint32(4241)}},
		}},
		{"state", "ok"},
	}
	for _, tc := range []struct {
		cmd   uint8
		flags netlink.HeaderFlags
		call  func(*Client) (Object, error)
	}{
		{unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, netlink.Request, func(c *Client) (Object, error) { return c.Diagnose(context.Background(), id) }},
		{unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET, netlink.Request | netlink.Dump, func(c *Client) (Object, error) { return c.Dump(context.Background(), id) }},
	} {
		c := testClient(t, genltest.CheckRequest(devlinktest.Family().ID, tc.cmd, tc.flags,
			func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
				r, err := parseReporter(attrs(t, reporterAttrs("pci", "0000:08:00.1", &port, func(ae *netlink.AttributeEncoder) {
					ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "tx")
				})), kernelClock{})
				if err != nil {
					t.Fatal(err)
				}
				gotID := requestID(t, greq.Data)
				if diff := cmp.Diff(r.ReporterID, gotID); diff != "" {
					t.Errorf("request selects (-want +got):\n%s", diff)
				}
				return []genetlink.Message{msg(tc.cmd, attrs(t, first)), msg(tc.cmd, attrs(t, second))}, nil
			}))
		got, err := tc.call(c)
		if err != nil {
			t.Fatalf("command %d: %v", tc.cmd, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("command %d (-want +got):\n%s", tc.cmd, diff)
		}
	}
}

// requestID decodes the reporter a request selects.
func requestID(t *testing.T, b []byte) ReporterID {
	t.Helper()
	var id ReporterID
	h, port, err := decodeHandle(b, func(ad *netlink.AttributeDecoder) {
		if ad.Type() == unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME {
			id.Name = ad.String()
		}
	})
	if err != nil {
		t.Fatalf("decoding request: %v", err)
	}
	id.Handle, id.Port = h, port
	return id
}

func TestSetAndRecover(t *testing.T) {
	id := ReporterID{Handle: Handle{"netdevsim", "netdevsim10"}, Name: "dummy"}
	type request struct {
		cmd   uint8
		id    ReporterID
		attrs map[uint16][]byte
	}
	var got []request
	c := testClient(t, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Flags&netlink.Acknowledge == 0 {
			t.Errorf("command %d sent without asking for an acknowledgement", greq.Header.Command)
		}
		r := request{cmd: greq.Header.Command, id: requestID(t, greq.Data), attrs: map[uint16][]byte{}}
		ad, _ := netlink.NewAttributeDecoder(greq.Data)
		for ad.Next() {
			switch ad.Type() {
			case unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP:
				r.attrs[ad.Type()] = ad.Bytes()
			}
		}
		got = append(got, r)
		if greq.Header.Command == unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER {
			return nil, devlinktest.Errno(unix.EINVAL) // as netdevsim with fail_recover set
		}
		return nil, nil
	})
	ctx := context.Background()
	if err := c.SetHealthReporter(ctx, id, HealthReporterSettings{AutoRecover: ptr(false), GracefulPeriod: ptr(3 * time.Second)}); err != nil {
		t.Fatalf("SetHealthReporter: %v", err)
	}
	if err := c.Recover(ctx, id); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Recover error %v, want EINVAL", err)
	}
	ms := make([]byte, 8)
	copy(ms, []byte{0xb8, 0x0b}) // 3000 little-endian
	want := []request{
		{unix.DEVLINK_CMD_HEALTH_REPORTER_SET, id, map[uint16][]byte{
			unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER:    {0},
			unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD: ms,
		}},
		{unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER, id, map[uint16][]byte{}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(request{})); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestContextDone(t *testing.T) {
	c := testClient(t, func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		t.Error("request sent after the context was cancelled")
		return nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.HealthReporters(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// fakeEvents is an event socket that delivers queued reads, then blocks
// until its deadline is set.
type fakeEvents struct {
	joined   []uint32
	reads    []eventRead
	deadline chan struct{}
	closed   bool
}

type eventRead struct {
	msgs []genetlink.Message
	err  error
}

func (f *fakeEvents) JoinGroup(g uint32) error { f.joined = append(f.joined, g); return nil }

func (f *fakeEvents) Receive() ([]genetlink.Message, []netlink.Message, error) {
	if len(f.reads) > 0 {
		r := f.reads[0]
		f.reads = f.reads[1:]
		return r.msgs, nil, r.err
	}
	<-f.deadline
	return nil, nil, os.ErrDeadlineExceeded
}

func (f *fakeEvents) SetReadDeadline(time.Time) error {
	select {
	case <-f.deadline:
	default:
		close(f.deadline)
	}
	return nil
}

func (f *fakeEvents) Close() error { f.closed = true; return nil }

func TestWatch(t *testing.T) {
	port := uint32(0)
	healthErr := attrs(t, reporterAttrs("netdevsim", "netdevsim10", nil, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "dummy")
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 1)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 1)
	}))
	dev := attrs(t, func(ae *netlink.AttributeEncoder) {
		encodeHandle(ae, Handle{"netdevsim", "netdevsim11"})
	})
	portMsg := attrs(t, func(ae *netlink.AttributeEncoder) {
		encodeHandle(ae, Handle{"netdevsim", "netdevsim11"})
		ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, 0)
	})
	fe := &fakeEvents{deadline: make(chan struct{}), reads: []eventRead{
		{msgs: []genetlink.Message{msg(unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER, healthErr), msg(unix.DEVLINK_CMD_PARAM_NEW, dev)}},
		{err: os.NewSyscallError("recvmsg", syscall.ENOBUFS)},
		{msgs: []genetlink.Message{
			msg(unix.DEVLINK_CMD_NEW, dev), msg(unix.DEVLINK_CMD_PORT_NEW, portMsg),
			msg(unix.DEVLINK_CMD_PORT_DEL, portMsg), msg(unix.DEVLINK_CMD_DEL, dev),
			msg(unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER, []byte{1, 2, 3}), // undecodable: dropped
		}},
	}}
	k := devlinktest.NewKernel(nil)
	conn, _ := k.Dial()
	c, err := initClient(conn, k.Dial, func() (eventConn, error) { return fe, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var got []Event
	err = (&Client{c: c}).Watch(ctx, func(e Event) {
		got = append(got, e)
		if len(got) == 6 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch returned %v, want context.Canceled", err)
	}
	d := &Device{Handle{"netdevsim", "netdevsim11"}}
	p := &Port{Handle: d.Handle, Index: port}
	want := []Event{
		{Kind: EventHealth, Reporter: &HealthReporter{
			ReporterID: ReporterID{Handle: Handle{"netdevsim", "netdevsim10"}, Name: "dummy"},
			State:      ptr(HealthStateError), ErrorCount: ptr(uint64(1)),
		}},
		{Kind: EventOverrun},
		{Kind: EventDeviceNew, Device: d},
		{Kind: EventPortNew, Port: p},
		{Kind: EventPortDel, Port: p},
		{Kind: EventDeviceDel, Device: d},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint32{9}, fe.joined); diff != "" {
		t.Errorf("joined groups (-want +got):\n%s", diff)
	}
	if !fe.closed {
		t.Error("event socket left open")
	}
}

// TestNewOnThisKernel opens the kernel the tests run on. Kernels without
// devlink (like this project's VMs) must give os.ErrNotExist, so callers
// can tell "nothing to collect" from a failure; kernels with it must list
// devices.
func TestNewOnThisKernel(t *testing.T) {
	c, err := New()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("New on this kernel: %v; want success or an error satisfying os.ErrNotExist", err)
		}
		t.Logf("this kernel has no devlink: %v", err)
		return
	}
	defer c.Close()
	devs, err := c.Devices(context.Background())
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	t.Logf("this kernel has devlink with %d devices", len(devs))
}

// TestReopenAfterDeadline checks that a request abandoned at its
// deadline closes its socket, so the rest of the abandoned reply cannot be
// taken for the next request's, and that the next request opens a fresh
// one.
func TestReopenAfterDeadline(t *testing.T) {
	first := true
	k := devlinktest.NewKernel(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		if first {
			first = false
			return nil, os.ErrDeadlineExceeded
		}
		return []genetlink.Message{msg(unix.DEVLINK_CMD_NEW, attrs(t, func(ae *netlink.AttributeEncoder) {
			encodeHandle(ae, Handle{"pci", "0000:08:00.0"})
		}))}, nil
	})
	c, err := NewWithDial(k.Dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conns := func(want string) string {
		opened, open := k.Conns()
		return fmt.Sprintf("%d opened, %d open; want %s", opened, open, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.Devices(ctx); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("first request: %v, want a deadline error", err)
	}
	if opened, open := k.Conns(); opened != 1 || open != 0 {
		t.Fatalf("after the abandoned request: %s", conns("the socket closed"))
	}
	devs, err := c.Devices(ctx)
	if err != nil || len(devs) != 1 {
		t.Fatalf("second request: %v, %v; want one device", devs, err)
	}
	if opened, open := k.Conns(); opened != 2 || open != 1 {
		t.Fatalf("after the second request: %s", conns("one fresh socket"))
	}
	if _, err := c.Devices(ctx); err != nil {
		t.Fatalf("third request: %v", err)
	}
	if opened, open := k.Conns(); opened != 2 || open != 1 {
		t.Fatalf("after the third request: %s", conns("the fresh socket reused"))
	}
}

// TestCaptureConnection checks the life of the connection that diagnose
// and dump requests use: opened at the first of them, reused, closed by
// Close, and not reopened after it.
func TestCaptureConnection(t *testing.T) {
	id := ReporterID{Handle: Handle{"pci", "0000:08:00.0"}, Name: "fw"}
	k := devlinktest.NewKernel(func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
		switch greq.Header.Command {
		case unix.DEVLINK_CMD_HEALTH_REPORTER_GET:
			return []genetlink.Message{msg(greq.Header.Command, attrs(t, reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
				ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw")
			})))}, nil
		case unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE, unix.DEVLINK_CMD_HEALTH_REPORTER_DUMP_GET:
			return []genetlink.Message{msg(greq.Header.Command, attrs(t, fmsgAttrs(objStart, pairStart, name("x"), u32(1), nestEnd, nestEnd)))}, nil
		}
		return nil, devlinktest.Errno(unix.EOPNOTSUPP)
	})
	c, err := NewWithDial(k.Dial)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []struct {
		name         string
		call         func() error
		opened, open int
	}{
		{"New", func() error { return nil }, 1, 1},
		{"polls", func() error {
			if _, err := c.HealthReporters(ctx); err != nil {
				return err
			}
			_, err := c.HealthReporter(ctx, id)
			return err
		}, 1, 1},
		{"first diagnose", func() error { _, err := c.Diagnose(ctx, id); return err }, 2, 2},
		{"dump", func() error { _, err := c.Dump(ctx, id); return err }, 2, 2},
		{"poll after captures", func() error { _, err := c.HealthReporter(ctx, id); return err }, 2, 2},
		{"Close", c.Close, 2, 0},
		{"dump after Close", func() error {
			if _, err := c.Dump(ctx, id); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("dump error %v, want net.ErrClosed", err)
			}
			return nil
		}, 2, 0},
		{"poll after Close", func() error {
			if _, err := c.HealthReporters(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("poll error %v, want net.ErrClosed", err)
			}
			return nil
		}, 2, 0},
	} {
		if err := step.call(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if opened, open := k.Conns(); opened != step.opened || open != step.open {
			t.Fatalf("after %s: %d connections opened, %d open; want %d, %d", step.name, opened, open, step.opened, step.open)
		}
	}
}

// TestDumpTimestamps checks how the time of a reporter's stored dump is
// decoded from what kernels send: Linux 5.4 and 5.3.12 and later send the
// wall clock in ns (DUMP_TS_NS) beside the older jiffies-based ms
// (DUMP_TS); 5.1, 5.2 and earlier 5.3 releases send only the older one,
// which is placed on the wall clock with a reading of the monotonic clock.
func TestDumpTimestamps(t *testing.T) {
	wall := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// 10 days of uptime: jiffies_to_msecs gives uptime less 300 s.
	const uptimeMs = 10 * 24 * 3600 * 1000
	now := kernelClock{wall: wall, msecs: uptimeMs - 300_000, ok: true}
	at := func(t time.Time) *time.Time { return &t }
	// wrap32 truncates as the kernel's unsigned int does.
	wrap32 := func(v uint64) uint32 { return uint32(v) }
	for _, tc := range []struct {
		name   string
		ns, ms *uint64
		now    kernelClock
		want   *time.Time
	}{
		{name: "no dump stored", now: now},
		{name: "both: the wall clock in ns wins", ns: ptr(uint64(1_700_000_000_123_000_000)), ms: ptr(uint64(1)), now: now,
			want: at(time.Unix(0, 1_700_000_000_123_000_000))},
		{name: "only ns", ns: ptr(uint64(1_700_000_000_123_000_000)), now: now, want: at(time.Unix(0, 1_700_000_000_123_000_000))},
		{name: "ns beyond int64", ns: ptr(uint64(1 << 63)), ms: ptr(uint64(now.msecs)), now: now},
		{name: "only ms: 90 s ago", ms: ptr(uint64(now.msecs - 90_000)), now: now, want: at(wall.Add(-90 * time.Second))},
		{name: "only ms: just now", ms: ptr(uint64(now.msecs)), now: now, want: at(wall)},
		{name: "only ms: 25 ms ahead of the monotonic clock", ms: ptr(uint64(now.msecs + 25)), now: now, want: at(wall)},
		{name: "only ms: 40 days ago", ms: ptr(uint64(now.msecs - 40*24*3600*1000)), now: now, want: at(wall.Add(-40 * 24 * time.Hour))},
		{
			// 200 s after boot jiffies_to_msecs is 2^32 - 100 s; 250 s
			// later it has wrapped to 150 s.
			name: "only ms: across the 32-bit wrap 5 minutes after boot", ms: ptr(uint64(1<<32 - 100_000)),
			now: kernelClock{wall: wall, msecs: 150_000, ok: true}, want: at(wall.Add(-250 * time.Second)),
		},
		{
			// 60 days of uptime have wrapped the clock once, 49.7 days
			// after boot; the dump was 2 hours ago.
			name: "only ms: after a wrap, 60 days up", ms: ptr(uint64(wrap32(60*24*3600*1000 - 300_000 - 2*3600*1000))),
			now: kernelClock{wall: wall, msecs: wrap32(60*24*3600*1000 - 300_000), ok: true}, want: at(wall.Add(-2 * time.Hour)),
		},
		{name: "only ms: no monotonic clock", ms: ptr(uint64(now.msecs)), now: kernelClock{wall: wall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := attrs(t, reporterAttrs("pci", "0000:08:00.0", nil, func(ae *netlink.AttributeEncoder) {
				ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw_fatal")
				if tc.ms != nil {
					ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, *tc.ms)
				}
				if tc.ns != nil {
					ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, *tc.ns)
				}
			}))
			r, err := parseReporter(b, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, r.LastDump); diff != "" {
				t.Errorf("LastDump (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadKernelClock checks the derivation of jiffies_to_msecs(jiffies)
// from the monotonic clock against the jiffies of the kernel the tests
// run on, which /proc/timer_list shows to root. /proc does not say the
// kernel's HZ, so the test accepts any of 100, 250 and 1000 for which the
// two agree; a wrong derivation (a missing 300 s offset, the 32-bit
// truncation) agrees with none.
func TestReadKernelClock(t *testing.T) {
	testenv.Root(t)
	timerList, err := os.ReadFile("/proc/timer_list")
	testenv.Require(t, err == nil, fmt.Sprintf("/proc/timer_list (%v)", err))
	now := readKernelClock()
	if !now.ok {
		t.Fatal("readKernelClock could not read the monotonic clock")
	}
	var jiffies uint64
	found := false
	for _, line := range strings.Split(string(timerList), "\n") {
		if v, ok := strings.CutPrefix(line, "jiffies: "); ok {
			if jiffies, err = strconv.ParseUint(v, 10, 64); err != nil {
				t.Fatalf("/proc/timer_list: %q: %v", line, err)
			}
			found = true
			break
		}
	}
	if !found {
		t.Fatal("/proc/timer_list has no jiffies line")
	}
	var tried []string
	for _, hz := range []uint64{100, 250, 1000} {
		// jiffies_to_msecs for HZ dividing 1000: a multiplication
		// truncated to the unsigned int it returns.
		kernel := uint32(jiffies * (1000 / hz))
		// The readings are a file read apart, and jiffies tick every
		// 1000/HZ ms.
		if msecsAge(kernel, now.msecs) < time.Second && msecsAge(now.msecs, kernel) < time.Second {
			t.Logf("jiffies %d, HZ %d: jiffies_to_msecs %d, derived %d", jiffies, hz, kernel, now.msecs)
			return
		}
		tried = append(tried, fmt.Sprintf("HZ %d: %d", hz, kernel))
	}
	t.Errorf("readKernelClock derives %d ms, but the kernel's jiffies %d give %s", now.msecs, jiffies, strings.Join(tried, ", "))
}
