package mad

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// TestUmadSoftRoCE boots a real kernel with ib_umad and a Soft-RoCE
// device over a dummy interface, and drives the kernel's user MAD
// interface through UmadTransport: the device is listed in
// class/infiniband_mad, /dev/infiniband/umadN opens and takes
// IB_USER_MAD_ENABLE_PKEY, a Performance Management agent (QP1)
// registers, and a directed-route SMP agent (QP0) is refused with
// EPROTONOSUPPORT, since a RoCE port has no QP0. No InfiniBand port runs
// here, so no MAD gets an answer; what a send does is logged.
func TestUmadSoftRoCE(t *testing.T) {
	if guest.InGuest() {
		umadGuestChecks(t)
		return
	}
	res := guest.RunTest(t, guest.Config{
		Run:      "^TestUmadSoftRoCE$",
		Args:     []string{"-test.v"},
		Modules:  []string{"crc32_generic", "rdma_rxe", "ib_umad", "dummy"},
		IPRoute2: true,
	})
	if !strings.Contains(res.Output, "--- PASS: TestUmadSoftRoCE") {
		t.Errorf("guest output lacks the passing test")
	}
}

func umadGuestChecks(t *testing.T) {
	for _, args := range [][]string{{"ip", "link", "set", "dummy0", "up"}, {"rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "dummy0"}} {
		if out, err := exec.Command(filepath.Join(guest.ToolDir, args[0]), args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var ports []UmadPort
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		ports, err = UmadPorts("/sys", "/dev/infiniband")
		if err == nil && len(ports) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no umad device for rxe0: %v %v", ports, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ports) != 1 || ports[0].Device != "rxe0" || ports[0].Port != 1 {
		t.Fatalf("umad ports %+v, want rxe0 port 1", ports)
	}
	t.Logf("umad port: %+v", ports[0])
	tr, err := OpenUmad(UmadConfig{Device: ports[0].Path, TimeoutMS: 100})
	if err != nil {
		t.Fatal(err)
	}
	id, err := tr.agent(ClassPerf)
	if err != nil {
		t.Fatalf("registering a PerfMgt agent: %v", err)
	}
	t.Logf("PerfMgt agent id %d", id)
	if _, err := tr.agent(ClassSubnDirected); !errors.Is(err, unix.EPROTONOSUPPORT) {
		t.Errorf("registering a directed-route SMP agent on a RoCE port: %v, want EPROTONOSUPPORT (no QP0)", err)
	} else {
		t.Logf("SMP agent refused as expected: %v", err)
	}
	c := NewClient(ClientConfig{Transport: tr, Timeout: time.Second}, zap.NewNop())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = c.ClassPortInfo(ctx, 1)
	cancel()
	t.Logf("ClassPortInfo to LID 1 on a RoCE port: %v", err)
	if err := c.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
}
