package guest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readArchive parses a newc archive back into name -> entry, in order.
func readArchive(t *testing.T, b []byte) ([]string, map[string]entry) {
	t.Helper()
	var names []string
	out := map[string]entry{}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, nameSize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		dataOff := align(off + 110 + nameSize)
		if name == "TRAILER!!!" {
			return names, out
		}
		names = append(names, name)
		out[name] = entry{mode: uint32(mode), data: b[dataOff : dataOff+size]}
		off = align(dataOff + size)
	}
}

func TestArchive(t *testing.T) {
	a := newArchive()
	a.file("lib/modules/6.1/extra/x.ko", 0o644, []byte("abcde"))
	a.symlink("bin/sh", "busybox")
	a.file("init", 0o755, []byte("#!/bin/sh\n"))
	var buf bytes.Buffer
	if err := a.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", buf.Len())
	}
	names, got := readArchive(t, buf.Bytes())
	want := []string{"bin", "bin/sh", "init", "lib", "lib/modules", "lib/modules/6.1", "lib/modules/6.1/extra", "lib/modules/6.1/extra/x.ko"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("entries %q, want %q", names, want)
	}
	if e := got["lib/modules/6.1/extra/x.ko"]; e.mode != modeFile|0o644 || string(e.data) != "abcde" {
		t.Errorf("file entry %o %q", e.mode, e.data)
	}
	if e := got["bin/sh"]; e.mode != modeSymlink|0o777 || string(e.data) != "busybox" {
		t.Errorf("symlink entry %o %q", e.mode, e.data)
	}
	if e := got["lib"]; e.mode != modeDir|0o755 {
		t.Errorf("implicit directory mode %o", e.mode)
	}
	// The system cpio, where present, must agree.
	if cpio, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command(cpio, "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -it: %v", err)
		}
		if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("cpio lists %q, want %q", got, want)
		}
	}
}

func TestSplitExit(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		status  int
	}{
		{"=== RUN X\r\nPASS\r\n" + exitMarker + "0\r\n", "=== RUN X\nPASS\n", 0},
		{"FAIL\n" + exitMarker + "1\n", "FAIL\n", 1},
		{"panic: boom\n", "panic: boom\n", -1},
		{exitMarker + "x\n", exitMarker + "x\n", -1},
	} {
		out, status := splitExit(tc.in)
		if out != tc.out || status != tc.status {
			t.Errorf("splitExit(%q) = %q, %d; want %q, %d", tc.in, out, status, tc.out, tc.status)
		}
	}
}

// TestGuest boots the real kernel once: it loads netdevsim, creates a
// device through sysfs and lists it with iproute2's devlink (and, with
// ib_core loaded, RDMA links with rdma), proving the
// kernel, module, initramfs and tool copying work together.
func TestGuest(t *testing.T) {
	if InGuest() {
		guestChecks(t)
		return
	}
	res := RunTest(t, Config{Run: "^TestGuest$", Args: []string{"-test.v"}, Modules: []string{"netdevsim", "ib_core"}, IPRoute2: true})
	if !strings.Contains(res.Output, "--- PASS: TestGuest") {
		t.Errorf("guest output lacks the passing test")
	}
}

func guestChecks(t *testing.T) {
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte("10 1"), 0); err != nil {
		t.Fatalf("creating a netdevsim device: %v", err)
	}
	nets, err := os.ReadDir("/sys/bus/netdevsim/devices/netdevsim10/net")
	if err != nil || len(nets) != 1 {
		t.Fatalf("netdevsim10 netdevs: %v, %v", nets, err)
	}
	t.Logf("netdevsim10 created netdev %s", nets[0].Name())
	if _, err := os.Stat("/sys/kernel/debug/netdevsim/netdevsim10/health/break_health"); err != nil {
		t.Errorf("netdevsim health debugfs: %v", err)
	}
	out, err := exec.Command(filepath.Join(ToolDir, "devlink"), "health", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("devlink health show: %v\n%s", err, out)
	}
	t.Logf("devlink health show:\n%s", out)
	for _, want := range []string{"netdevsim/netdevsim10", "empty", "dummy"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("devlink health show lacks %q", want)
		}
	}
	if out, err := exec.Command(filepath.Join(ToolDir, "rdma"), "link", "show").CombinedOutput(); err != nil {
		t.Errorf("rdma link show: %v\n%s", err, out)
	}
}

// TestInGuestNeedsTheKernelMarker checks that the environment variable
// alone does not make a real host look like the guest: tests that write
// to /dev/kmsg rely on InGuest.
func TestInGuestNeedsTheKernelMarker(t *testing.T) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Skipf("no /proc/cmdline: %v", err) // not Linux; InGuest is false there anyway
	}
	if strings.Contains(string(b), cmdlineMarker) {
		t.Skip("running inside the guest")
	}
	t.Setenv(EnvVar, "1")
	if InGuest() {
		t.Errorf("InGuest() is true on a host whose kernel command line lacks %s", cmdlineMarker)
	}
}
