package topology

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fn builds a Function below host bridge host with the given bridges.
func fn(addr, host string, numa int, bridges ...string) Function {
	return Function{Address: addr, HostBridge: host, Bridges: bridges, NUMANode: numa}
}

// TestClassify checks the link between two functions for each shape of
// the path between them.
func TestClassify(t *testing.T) {
	const rp, us, ds1, ds2 = "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0"
	for _, tc := range []struct {
		name string
		a, b Function
		want Link
	}{
		{"one switch, two downstream ports", fn("0000:03:00.0", "pci0000:00", 0, rp, us, ds1), fn("0000:04:00.0", "pci0000:00", 0, rp, us, ds2), LinkPIX},
		{"one switch, one downstream port (a multi-function card)", fn("0000:03:00.0", "pci0000:00", 0, rp, us, ds1), fn("0000:03:00.1", "pci0000:00", 0, rp, us, ds1), LinkPIX},
		{"a second switch below one", fn("0000:03:00.0", "pci0000:00", 0, rp, us, ds1), fn("0000:06:00.0", "pci0000:00", 0, rp, us, ds2, "0000:04:00.0", "0000:05:00.0"), LinkPXB},
		{"two switches below one", fn("0000:05:00.0", "pci0000:00", 0, rp, us, ds1, "0000:03:00.0", "0000:04:00.0"), fn("0000:08:00.0", "pci0000:00", 0, rp, us, ds2, "0000:06:00.0", "0000:07:00.0"), LinkPXB},
		{"both deep below one downstream port", fn("0000:05:00.0", "pci0000:00", 0, rp, us, ds1, "0000:03:00.0", "0000:04:00.0"), fn("0000:05:00.1", "pci0000:00", 0, rp, us, ds1, "0000:03:00.0", "0000:04:00.0"), LinkPIX},
		{"different root ports", fn("0000:01:00.0", "pci0000:00", 0, rp), fn("0000:41:00.0", "pci0000:00", 0, "0000:00:03.0"), LinkPHB},
		{"on the root complex's own bus", fn("0000:00:05.0", "pci0000:00", 0), fn("0000:01:00.0", "pci0000:00", 0, rp), LinkPHB},
		{"the same root port", fn("0000:01:00.0", "pci0000:00", 0, rp), fn("0000:01:00.1", "pci0000:00", 0, rp), LinkPHB},
		{"another host bridge, same node", fn("0000:01:00.0", "pci0000:00", 0, rp), fn("0000:21:00.0", "pci0000:20", 0, "0000:20:01.0"), LinkNODE},
		{"another host bridge, no node known", fn("0000:01:00.0", "pci0000:00", -1, rp), fn("0000:21:00.0", "pci0000:20", -1, "0000:20:01.0"), LinkNODE},
		{"another node", fn("0000:01:00.0", "pci0000:00", 0, rp), fn("0000:81:00.0", "pci0000:80", 1, "0000:80:01.0"), LinkSYS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.a, tc.b); got != tc.want {
				t.Errorf("Classify(a, b) = %v, want %v", got, tc.want)
			}
			if got := Classify(tc.b, tc.a); got != tc.want {
				t.Errorf("Classify(b, a) = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPair checks the choice of GPU: the closest link first, NICs with
// closer links first, free GPUs before taken ones, and no GPU across
// NUMA nodes.
func TestPair(t *testing.T) {
	const rp = "0000:00:01.0"
	gpu := func(i int, f Function) GPU { return GPU{Function: f, Index: i} }
	nic := func(name string, f Function) NIC { return NIC{Function: f, Devices: []string{name}} }
	// Switch 01 holds GPU0 (03) and NIC a (04); GPU1 (21) is on another
	// root port of the same root complex; GPU2 in another NUMA node.
	g0 := gpu(0, fn("0000:03:00.0", "pci0000:00", 0, rp, "0000:01:00.0", "0000:02:00.0"))
	g1 := gpu(1, fn("0000:21:00.0", "pci0000:00", 0, "0000:00:03.0"))
	g2 := gpu(2, fn("0000:81:00.0", "pci0000:80", 1, "0000:80:01.0"))
	a := nic("a", fn("0000:04:00.0", "pci0000:00", 0, rp, "0000:01:00.0", "0000:02:01.0"))
	// b (on bus 00, before a in address order) is PHB to GPU0 and GPU1.
	b := nic("b", fn("0000:00:05.0", "pci0000:00", 0))
	// c is in a third NUMA node: no GPU.
	c := nic("c", fn("0000:c1:00.0", "pci0000:c0", 2, "0000:c0:01.0"))
	rows := Pair(Host{NICs: []NIC{b, a, c}, GPUs: []GPU{g0, g1, g2}}, Rails{Auto: true})
	type got struct {
		nic, link, rail string
		gpu             int
	}
	var out []got
	for _, r := range rows {
		g := got{nic: r.NIC.Devices[0], link: r.Link.String(), rail: r.Rail, gpu: -1}
		if r.GPU != nil {
			g.gpu = r.GPU.Index
		}
		out = append(out, g)
	}
	want := []got{
		// a claims GPU0 first (PIX); b, PHB to both, takes the free GPU1.
		{nic: "b", link: "PHB", gpu: 1},
		{nic: "a", link: "PIX", gpu: 0, rail: "0"},
		{nic: "c", link: "", gpu: -1},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("Pair = %+v, want %+v", out, want)
	}
	// With one GPU, two NICs equally near share it.
	rows = Pair(Host{NICs: []NIC{a, {Function: fn("0000:05:00.0", "pci0000:00", 0, rp, "0000:01:00.0", "0000:02:02.0"), Devices: []string{"d"}}}, GPUs: []GPU{g0}}, Rails{})
	for _, r := range rows {
		if r.GPU == nil || r.GPU.Index != 0 || r.Link != LinkPIX {
			t.Errorf("%s: GPU %+v link %v, want GPU0 PIX", r.NIC.Devices[0], r.GPU, r.Link)
		}
	}
	// No GPUs: every NIC without one.
	for _, r := range Pair(Host{NICs: []NIC{a, b}}, Rails{Auto: true}) {
		if r.GPU != nil || r.Link != LinkNone || r.Rail != "" {
			t.Errorf("%s without GPUs: %+v", r.NIC.Devices[0], r)
		}
	}
}

// TestParseRails checks the flag's forms and its errors.
func TestParseRails(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rails
		err  string
	}{
		{in: "", want: Rails{}},
		{in: "auto", want: Rails{Auto: true}},
		{in: " mlx5_0=0, mlx5_1 = 1,", want: Rails{Map: map[string]string{"mlx5_0": "0", "mlx5_1": "1"}}},
		{in: "mlx5_0", err: "want device=rail"},
		{in: "mlx5_0=", err: "want device=rail"},
		{in: "=1", err: "want device=rail"},
		{in: "mlx5_0=0,mlx5_0=1", err: "given twice"},
		{in: ",", err: "no device=rail pair"},
	} {
		got, err := ParseRails(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRails(%q) error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRails(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestParseDevicePath checks how a device's path below the sysfs root
// places it.
func TestParseDevicePath(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Function
		wantDir string
		ok      bool
	}{
		{in: "devices/pci0000:00/0000:00:01.1/0000:08:00.0", ok: true, wantDir: "devices/pci0000:00/0000:00:01.1/0000:08:00.0",
			want: Function{Address: "0000:08:00.0", HostBridge: "pci0000:00", Bridges: []string{"0000:00:01.1"}}},
		// virtio-net: the function is the PCI device above virtio0.
		{in: "devices/pci0000:00/0000:00:03.0/virtio0", ok: true, wantDir: "devices/pci0000:00/0000:00:03.0",
			want: Function{Address: "0000:00:03.0", HostBridge: "pci0000:00", Bridges: []string{}}},
		// A VMD domain's host bridge is not the function.
		{in: "devices/pci0000:00/0000:00:0e.0/pci10000:00"},
		// An Intel VMD domain below its own host bridge.
		{in: "devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:02.0/10000:01:00.0", ok: true, wantDir: "devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:02.0/10000:01:00.0",
			want: Function{Address: "10000:01:00.0", HostBridge: "pci0000:00", Bridges: []string{"0000:00:0e.0", "10000:00:02.0"}}},
		{in: "devices/virtual/net/lo"},
		{in: "devices/platform/soc/eth0"},
		{in: "class/net/eth0"},
		{in: "devices/pci0000:00"},
	} {
		got, dir, ok := parseDevicePath(tc.in)
		if ok != tc.ok || (ok && (!reflect.DeepEqual(got, tc.want) || dir != tc.wantDir)) {
			t.Errorf("parseDevicePath(%q) = %+v, %q, %v; want %+v, %q, %v", tc.in, got, dir, ok, tc.want, tc.wantDir, tc.ok)
		}
	}
}

// TestParseGPUInformation checks the real file of an NVIDIA L4 (quoted
// in canonical/snapd#14893, testdata/README.md) and the errors.
func TestParseGPUInformation(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "nvidia_l4_information.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseGPUInformation(b)
	want := GPUInformation{UUID: "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689", BusLocation: "0000:70:00.0"}
	if err != nil || got != want {
		t.Errorf("ParseGPUInformation(L4) = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{
		"",
		"Model: NVIDIA L4\n",
		"GPU UUID: \t GPU-\n",
		"GPU UUID: \t GPU-xyz\n",
		"GPU UUID: \t MIG-3291dfa4\n",
		"GPU UUID: \t GPU-3291dfa4\nBus Location: \t 70:00.0\n",
	} {
		if _, err := ParseGPUInformation([]byte(bad)); err == nil {
			t.Errorf("ParseGPUInformation(%q) succeeded", bad)
		}
	}
}

// FuzzParseGPUInformation checks that any bytes give either an error or
// a UUID and bus location that are safe as label values.
func FuzzParseGPUInformation(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "nvidia_l4_information.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("GPU UUID: GPU-1\nBus Location: 10000:01:00.7\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseGPUInformation(b)
		if err != nil {
			return
		}
		if !validUUID(info.UUID) {
			t.Errorf("UUID %q accepted", info.UUID)
		}
		if info.BusLocation != "" && (!isPCIAddress(info.BusLocation) || BusID(info.BusLocation) == "") {
			t.Errorf("bus location %q accepted", info.BusLocation)
		}
	})
}

// TestBusID checks the NVML form of PCI addresses.
func TestBusID(t *testing.T) {
	for in, want := range map[string]string{
		"0000:07:00.0":  "00000000:07:00.0",
		"0000:bd:00.0":  "00000000:BD:00.0",
		"10000:01:00.7": "00010000:01:00.7",
		"0000:07:00.8":  "",
		"0000:07:00":    "",
		"0000:7:00.0":   "",
		"0000:0G:00.0":  "",
		"":              "",
	} {
		if got := BusID(in); got != want {
			t.Errorf("BusID(%q) = %q, want %q", in, got, want)
		}
	}
}
