//go:build linux

package captest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nic-exporter/nic_exporter/internal/testenv/guest"
)

// A container runtime confines a container's device access with the
// cgroup v2 device controller: runc (libcontainer/cgroups/devices)
// compiles the container's allowed device list into a
// BPF_PROG_TYPE_CGROUP_DEVICE program and attaches it to the container's
// cgroup. The kernel runs that program on every open and mknod of a
// device node, whatever the process's capabilities. The helpers here do
// the same with a small program of our own, so that the guest test can
// run the exporter under the device policy of an unprivileged pod
// without a container runtime in the guest.

// deviceRule allows access to the character devices of one major number
// and one minor number, or every minor number when Minor is -1.
type deviceRule struct {
	Major, Minor int32
}

// String names the rule like a device cgroup list entry ("c 1:11").
func (r deviceRule) String() string {
	if r.Minor < 0 {
		return fmt.Sprintf("c %d:*", r.Major)
	}
	return fmt.Sprintf("c %d:%d", r.Major, r.Minor)
}

// runtimeDefaultDevices are the character devices runc allows every
// container without privileged (libcontainer/specconv AllowedDevices, the
// list containerd's CRI and CRI-O start from): /dev/null, /dev/zero,
// /dev/full, /dev/random, /dev/urandom, /dev/tty, /dev/console,
// /dev/ptmx and /dev/pts/*. /dev/kmsg (c 1:11) is not among them, which
// is why a hostPath mount of /dev/kmsg alone cannot be opened.
var runtimeDefaultDevices = []deviceRule{
	{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 1}, {5, 2}, {136, -1},
}

// kmsgDevice is /dev/kmsg, the rule a device plugin adds for the one
// device it hands to the container (drivers/char/mem.c: minor 11 of the
// mem major).
var kmsgDevice = deviceRule{1, 11}

// bpfInsn is struct bpf_insn of include/uapi/linux/bpf.h.
type bpfInsn struct {
	Code uint8
	Regs uint8 // dst_reg in the low four bits, src_reg in the high four
	Off  int16
	Imm  int32
}

// The fields of struct bpf_cgroup_dev_ctx the program reads: access_type
// (device type in the low 16 bits, access in the high 16), major, minor.
const (
	ctxAccessType = 0
	ctxMajor      = 4
	ctxMinor      = 8
)

// deviceProgram returns a cgroup device program that allows character
// devices matching one of rules, for any access, and denies everything
// else: block devices, and every other character device.
func deviceProgram(rules []deviceRule) []bpfInsn {
	ldxw := func(dst, off uint8) bpfInsn {
		return bpfInsn{Code: unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W, Regs: dst | 1<<4, Off: int16(off)}
	}
	movImm := func(dst uint8, imm int32) bpfInsn {
		return bpfInsn{Code: unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K, Regs: dst, Imm: imm}
	}
	jneImm := func(dst uint8, imm int32, off int16) bpfInsn {
		return bpfInsn{Code: unix.BPF_JMP | unix.BPF_JNE | unix.BPF_K, Regs: dst, Off: off, Imm: imm}
	}
	exit := bpfInsn{Code: unix.BPF_JMP | unix.BPF_EXIT}

	prog := []bpfInsn{
		ldxw(2, ctxAccessType),
		{Code: unix.BPF_ALU64 | unix.BPF_AND | unix.BPF_K, Regs: 2, Imm: 0xffff},
		ldxw(3, ctxMajor),
		ldxw(4, ctxMinor),
	}
	for _, r := range rules {
		// Each rule is a block of checks that jump past the block's
		// "allow" on the first mismatch.
		var checks []bpfInsn
		checks = append(checks, jneImm(2, unix.BPF_DEVCG_DEV_CHAR, 0), jneImm(3, r.Major, 0))
		if r.Minor >= 0 {
			checks = append(checks, jneImm(4, r.Minor, 0))
		}
		for i := range checks {
			// Skip the remaining checks and the two allow
			// instructions.
			checks[i].Off = int16(len(checks) - 1 - i + 2)
		}
		prog = append(prog, checks...)
		prog = append(prog, movImm(0, 1), exit)
	}
	return append(prog, movImm(0, 0), exit)
}

// bpfProgLoadAttr is the head of union bpf_attr for BPF_PROG_LOAD, up to
// the fields this program needs; the kernel treats the bytes it is not
// given as zero.
type bpfProgLoadAttr struct {
	ProgType    uint32
	InsnCnt     uint32
	Insns       uint64
	License     uint64
	LogLevel    uint32
	LogSize     uint32
	LogBuf      uint64
	KernVersion uint32
	ProgFlags   uint32
}

// bpfProgAttachAttr is union bpf_attr for BPF_PROG_ATTACH and
// BPF_PROG_DETACH.
type bpfProgAttachAttr struct {
	TargetFd    uint32
	AttachBpfFd uint32
	AttachType  uint32
	AttachFlags uint32
}

// loadDeviceProgram loads prog as a cgroup device program and returns its
// file descriptor, or the verifier's log with the error.
func loadDeviceProgram(prog []bpfInsn) (int, error) {
	code := make([]byte, 0, len(prog)*8)
	for _, in := range prog {
		code = append(code, in.Code, in.Regs)
		code = binary.LittleEndian.AppendUint16(code, uint16(in.Off))
		code = binary.LittleEndian.AppendUint32(code, uint32(in.Imm))
	}
	license := []byte("GPL\x00")
	log := make([]byte, 64<<10)
	attr := bpfProgLoadAttr{
		ProgType: unix.BPF_PROG_TYPE_CGROUP_DEVICE,
		InsnCnt:  uint32(len(prog)),
		Insns:    uint64(uintptr(unsafe.Pointer(&code[0]))),
		License:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		LogLevel: 1,
		LogSize:  uint32(len(log)),
		LogBuf:   uint64(uintptr(unsafe.Pointer(&log[0]))),
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(code)
	runtime.KeepAlive(license)
	if errno != 0 {
		return -1, fmt.Errorf("loading the device program: %w; verifier log:\n%s", errno, log[:clen(log)])
	}
	return int(fd), nil
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

func progAttach(cmd uintptr, cgroupFd, progFd int) error {
	attr := bpfProgAttachAttr{
		TargetFd:    uint32(cgroupFd),
		AttachBpfFd: uint32(progFd),
		AttachType:  unix.BPF_CGROUP_DEVICE,
	}
	if _, _, errno := unix.Syscall(unix.SYS_BPF, cmd, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)); errno != 0 {
		return errno
	}
	return nil
}

// cgroupRoot mounts the cgroup v2 hierarchy in the guest, once, and
// returns its mount point.
func cgroupRoot(t *testing.T) string {
	t.Helper()
	const root = "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err == nil {
		return root
	}
	if err := unix.Mount("cgroup2", root, "cgroup2", 0, ""); err != nil {
		t.Fatalf("mounting cgroup2 on %s: %v", root, err)
	}
	return root
}

// deviceCgroup creates a cgroup that allows exactly rules, as a container
// runtime's would, and returns a file descriptor of its directory for
// SysProcAttr.CgroupFD. The cgroup is removed when the test ends; its
// processes must have exited by then.
func deviceCgroup(t *testing.T, name string, rules []deviceRule) int {
	t.Helper()
	if !guest.InGuest() {
		t.Fatal("creating cgroups outside the qemu guest")
	}
	dir := filepath.Join(cgroupRoot(t), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cg, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := loadDeviceProgram(deviceProgram(rules))
	if err != nil {
		t.Fatal(err)
	}
	if err := progAttach(unix.BPF_PROG_ATTACH, cg, prog); err != nil {
		t.Fatalf("attaching the device program to %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := progAttach(unix.BPF_PROG_DETACH, cg, prog); err != nil {
			t.Errorf("detaching the device program from %s: %v", dir, err)
		}
		unix.Close(prog)
		unix.Close(cg)
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing cgroup %s: %v", dir, err)
		}
	})
	return cg
}
