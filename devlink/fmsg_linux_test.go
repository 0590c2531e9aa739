//go:build linux

package devlink

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

func u8(v uint8) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, fmsgU8)
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, v)
	}
}

func boolean(v bool) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, fmsgFlag)
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, boolByte(v))
	}
}

func u64(v uint64) func(*netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) {
		ae.Uint8(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE, fmsgU64)
		ae.Uint64(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, v)
	}
}

func pair(n string, v func(*netlink.AttributeEncoder)) []func(*netlink.AttributeEncoder) {
	return []func(*netlink.AttributeEncoder){pairStart, name(n), v, nestEnd}
}

func cat(parts ...any) []func(*netlink.AttributeEncoder) {
	var out []func(*netlink.AttributeEncoder)
	for _, p := range parts {
		switch p := p.(type) {
		case func(*netlink.AttributeEncoder):
			out = append(out, p)
		case []func(*netlink.AttributeEncoder):
			out = append(out, p...)
		}
	}
	return out
}

// netdevsimDiagnose is the token stream of netdevsim's dummy reporter's
// diagnose in Linux 6.1 (drivers/net/netdevsim/health.c), including the
// surplus nest end it writes after "test_nest".
func netdevsimDiagnose() []func(*netlink.AttributeEncoder) {
	return cat(objStart,
		pair("break_message", str("foo")),
		pair("test_bool", boolean(true)),
		pair("test_u8", u8(1)),
		pair("test_u32", u32(3)),
		pair("test_u64", u64(4)),
		pair("test_string", str("somestring")),
		pairStart, name("test_binary"), arrStart, value(fmsgBinary, []byte{0xde, 0xad}), value(fmsgBinary, []byte{0xbe}), nestEnd, nestEnd,
		pairStart, name("test_nest"), objStart, pair("nested_test_bool", boolean(false)), pair("nested_test_u8", u8(0)), nestEnd, nestEnd,
		nestEnd, nestEnd, // devlink_fmsg_arr_pair_nest_end with nothing open
		pairStart, name("test_u32_array"), arrStart, u32(0), u32(1), u32(2), nestEnd, nestEnd,
		pairStart, name("test_array_of_objects"), arrStart,
		objStart, pair("in_array_nested_test_bool", boolean(false)), pair("in_array_nested_test_u8", u8(0)), nestEnd,
		nestEnd, nestEnd,
		nestEnd)
}

func TestDecodeFmsg(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens []func(*netlink.AttributeEncoder)
		want   Object
		json   string
		err    bool
	}{
		{
			name:   "netdevsim dummy diagnose",
			tokens: netdevsimDiagnose(),
			want: Object{
				{"break_message", "foo"},
				{"test_bool", true},
				{"test_u8", uint8(1)},
				{"test_u32", uint32(3)},
				{"test_u64", uint64(4)},
				{"test_string", "somestring"},
				{"test_binary", Array{Binary{0xde, 0xad}, Binary{0xbe}}},
				{"test_nest", Object{{"nested_test_bool", false}, {"nested_test_u8", uint8(0)}}},
				{"test_u32_array", Array{uint32(0), uint32(1), uint32(2)}},
				{"test_array_of_objects", Array{Object{{"in_array_nested_test_bool", false}, {"in_array_nested_test_u8", uint8(0)}}}},
			},
			json: `{"break_message":"foo","test_bool":true,"test_u8":1,"test_u32":3,"test_u64":4,"test_string":"somestring",` +
				`"test_binary":["dead","be"],"test_nest":{"nested_test_bool":false,"nested_test_u8":0},"test_u32_array":[0,1,2],` +
				`"test_array_of_objects":[{"in_array_nested_test_bool":false,"in_array_nested_test_u8":0}]}`,
		},
		{name: "empty", want: Object{}, json: `{}`},
		{name: "empty object", tokens: cat(objStart, nestEnd), want: Object{}, json: `{}`},
		{
			name:   "repeated names keep order",
			tokens: cat(objStart, pair("b", u32(1)), pair("a", u32(2)), pair("b", u32(3)), nestEnd),
			want:   Object{{"b", uint32(1)}, {"a", uint32(2)}, {"b", uint32(3)}},
			json:   `{"b":1,"a":2,"b":3}`,
		},
		{
			name:   "truncated stream is closed",
			tokens: cat(objStart, pairStart, name("SQs"), arrStart, objStart, pair("sqn", u32(7))),
			want:   Object{{"SQs", Array{Object{{"sqn", uint32(7)}}}}},
			json:   `{"SQs":[{"sqn":7}]}`,
		},
		{
			name:   "unknown value type kept as bytes",
			tokens: cat(objStart, pairStart, name("future"), value(200, []byte{1, 2}), nestEnd, nestEnd),
			want:   Object{{"future", Binary{1, 2}}},
			json:   `{"future":"0102"}`,
		},
		{name: "pair without value", tokens: cat(pairStart, name("x"), nestEnd), want: Object{{"x", nil}}, json: `{"x":null}`},
		{name: "name outside a pair", tokens: cat(objStart, name("x")), err: true},
		{name: "value outside a pair", tokens: cat(objStart, u32(1)), err: true},
		{name: "value without type", tokens: cat(pairStart, name("x"), func(ae *netlink.AttributeEncoder) {
			ae.Uint32(unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA, 1)
		}), err: true},
		{name: "u32 too short", tokens: cat(pairStart, name("x"), value(fmsgU32, []byte{1, 2})), err: true},
		{name: "two values in a pair", tokens: cat(pairStart, name("x"), u32(1), u32(2)), err: true},
		{name: "pair in an array", tokens: cat(pairStart, name("x"), arrStart, pairStart), err: true},
		{name: "array without a name", tokens: cat(objStart, arrStart), err: true},
		{name: "pair without a name", tokens: cat(pairStart, u32(1), nestEnd), err: true},
		{name: "too deep", tokens: func() []func(*netlink.AttributeEncoder) {
			out := cat(pairStart, name("x"))
			for i := 0; i < 40; i++ {
				out = append(out, arrStart)
			}
			return out
		}(), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := attrs(t, fmsgAttrs(tc.tokens...))
			got, err := decodeFmsg([][]byte{payload})
			if tc.err {
				if !errors.Is(err, errFmsg) {
					t.Fatalf("error %v, want a malformed message error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("JSON\n got %s\nwant %s", b, tc.json)
			}
		})
	}
}

// FuzzDecodeFmsg checks that no byte sequence panics the fmsg decoder and
// that whatever it accepts renders as JSON.
func FuzzDecodeFmsg(f *testing.F) {
	f.Add(attrs(f, fmsgAttrs(netdevsimDiagnose()...)))
	f.Add(attrs(f, fmsgAttrs(cat(objStart, pairStart, name("SQs"), arrStart, objStart, pair("sqn", u32(7)))...)))
	f.Add([]byte{4, 0, 0x6b, 0})
	for _, name := range []string{"diagnose", "dump"} {
		for _, m := range recorded(f, name) {
			f.Add(m.Data)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeFmsg([][]byte{b})
		if err != nil {
			return
		}
		if _, err := json.Marshal(o); err != nil {
			t.Fatalf("decoded tree does not render: %v", err)
		}
	})
}

// FuzzParseMessages feeds arbitrary attributes to every message decoder.
func FuzzParseMessages(f *testing.F) {
	port := uint32(65535)
	f.Add(attrs(f, reporterAttrs("pci", "0000:08:00.0", &port, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, "tx")
		ae.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, 1)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 3)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, 1<<63)
		ae.Uint64(unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, 1<<64-1)
	})))
	f.Add(attrs(f, func(ae *netlink.AttributeEncoder) {
		encodeHandle(ae, Handle{"pci", "0000:08:00.1"})
		ae.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, 1)
		ae.String(unix.DEVLINK_ATTR_PORT_NETDEV_NAME, "enp8s0f1np1")
		ae.String(unix.DEVLINK_ATTR_INFO_DRIVER_NAME, "mlx5_core")
		ae.Nested(unix.DEVLINK_ATTR_INFO_VERSION_RUNNING, func(nae *netlink.AttributeEncoder) error {
			nae.String(unix.DEVLINK_ATTR_INFO_VERSION_NAME, "fw.version")
			nae.String(unix.DEVLINK_ATTR_INFO_VERSION_VALUE, "28.45.4028")
			return nil
		})
	}))
	f.Add([]byte{5, 0, 1, 0, 'p'})
	for _, name := range []string{"devices", "ports", "info", "reporters", "events"} {
		for _, m := range recorded(f, name) {
			f.Add(m.Data)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseDevice(b)
		_, _ = parsePort(b)
		_, _ = parseInfo(b)
		if r, err := parseReporter(b, kernelClock{}); err == nil && r.Name == "" {
			t.Fatal("accepted a reporter without a name")
		}
		for _, cmd := range []uint8{unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER, unix.DEVLINK_CMD_NEW, unix.DEVLINK_CMD_PORT_DEL} {
			_, _ = decodeEvent(genetlink.Message{Header: genetlink.Header{Command: cmd}, Data: b}, kernelClock{})
		}
	})
}

// BenchmarkDecodeFmsg decodes netdevsim's dummy diagnose output.
func BenchmarkDecodeFmsg(b *testing.B) {
	payload := attrs(b, fmsgAttrs(netdevsimDiagnose()...))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeFmsg([][]byte{payload}); err != nil {
			b.Fatal(err)
		}
	}
}
