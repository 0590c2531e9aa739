package mad

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// umadHeader is the kernel's UAPI header as Debian's linux-libc-dev
// installs it (include/uapi/rdma/ib_user_mad.h in the kernel tree).
const umadHeader = "/usr/include/rdma/ib_user_mad.h"

// TestUmadLayout compiles a C program against the kernel's header and
// compares the sizes, offsets and ioctl numbers it prints with the
// constants the umad transport encodes by hand.
func TestUmadLayout(t *testing.T) {
	gcc := testenv.LookPath(t, "gcc")
	_, err := os.Stat(umadHeader)
	testenv.Require(t, err == nil, umadHeader+" (Debian package linux-libc-dev)")
	dir := t.TempDir()
	src := `#include <stdio.h>
#include <stddef.h>
#include <rdma/ib_user_mad.h>
#define P(name, v) printf("%s %lu\n", name, (unsigned long)(v))
int main(void) {
	P("hdr_size", sizeof(struct ib_user_mad_hdr));
	P("reg_req_size", sizeof(struct ib_user_mad_reg_req));
	P("register_agent", IB_USER_MAD_REGISTER_AGENT);
	P("unregister_agent", IB_USER_MAD_UNREGISTER_AGENT);
	P("enable_pkey", IB_USER_MAD_ENABLE_PKEY);
	P("abi_version", IB_USER_MAD_ABI_VERSION);
	P("hdr_id", offsetof(struct ib_user_mad_hdr, id));
	P("hdr_status", offsetof(struct ib_user_mad_hdr, status));
	P("hdr_timeout_ms", offsetof(struct ib_user_mad_hdr, timeout_ms));
	P("hdr_retries", offsetof(struct ib_user_mad_hdr, retries));
	P("hdr_qpn", offsetof(struct ib_user_mad_hdr, qpn));
	P("hdr_qkey", offsetof(struct ib_user_mad_hdr, qkey));
	P("hdr_lid", offsetof(struct ib_user_mad_hdr, lid));
	P("hdr_pkey_index", offsetof(struct ib_user_mad_hdr, pkey_index));
	P("reg_qpn", offsetof(struct ib_user_mad_reg_req, qpn));
	P("reg_mgmt_class", offsetof(struct ib_user_mad_reg_req, mgmt_class));
	P("reg_mgmt_class_version", offsetof(struct ib_user_mad_reg_req, mgmt_class_version));
	P("reg_oui", offsetof(struct ib_user_mad_reg_req, oui));
	P("reg_rmpp_version", offsetof(struct ib_user_mad_reg_req, rmpp_version));
	return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "layout.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(gcc, "-o", bin, filepath.Join(dir, "layout.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), " ")
		got[name], _ = strconv.ParseUint(v, 10, 64)
	}
	want := map[string]uint64{
		"hdr_size": umadHdrSize, "reg_req_size": umadRegReqSize,
		"register_agent": umadRegisterAgent, "unregister_agent": umadUnregisterAgent, "enable_pkey": umadEnablePKey,
		"abi_version": umadABIVersion,
		"hdr_id":      umadHdrID, "hdr_status": umadHdrStatus, "hdr_timeout_ms": umadHdrTimeoutMS, "hdr_retries": umadHdrRetries,
		"hdr_qpn": umadHdrQPN, "hdr_qkey": umadHdrQKey, "hdr_lid": umadHdrLID, "hdr_pkey_index": umadHdrPKeyIndex,
		"reg_qpn": umadRegQPN, "reg_mgmt_class": umadRegClass, "reg_mgmt_class_version": umadRegVersion,
		"reg_oui": umadRegOUI, "reg_rmpp_version": umadRegRMPP,
	}
	if len(got) != len(want) {
		t.Fatalf("the C program printed %d values, want %d:\n%s", len(got), len(want), out)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: the kernel header says %d (%#x), the transport uses %d (%#x)", k, got[k], got[k], w, w)
		}
	}
}

// TestUmadEncode checks the header the transport writes in front of a
// PerfMgt request and a directed-route SMP.
func TestUmadEncode(t *testing.T) {
	tr := &UmadTransport{cfg: UmadConfig{TimeoutMS: 250, Retries: 2}}
	mad := make([]byte, MADSize)
	mad[1] = ClassPerf
	b := tr.encodeUmad(7, 0x0102, 1, mad)
	if len(b) != umadHdrSize+MADSize {
		t.Fatalf("%d bytes", len(b))
	}
	if binary.NativeEndian.Uint32(b[0:4]) != 7 || binary.NativeEndian.Uint32(b[8:12]) != 250 || binary.NativeEndian.Uint32(b[12:16]) != 2 {
		t.Errorf("id/timeout/retries: % x", b[0:16])
	}
	if !bytes.Equal(b[20:30], []byte{0, 0, 0, 1, 0x80, 0x01, 0, 0, 0x01, 0x02}) {
		t.Errorf("qpn/qkey/lid: % x, want QP1, Q_Key 0x80010000, LID 0x0102 big-endian", b[20:30])
	}
	b = tr.encodeUmad(8, permissiveLID, 0, mad)
	if !bytes.Equal(b[20:30], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}) {
		t.Errorf("SMP qpn/qkey/lid: % x, want QP0, no Q_Key, the permissive LID", b[20:30])
	}
	for _, tc := range []struct {
		class uint8
		qpn   byte
	}{{ClassSubnDirected, 0}, {ClassSubnLID, 0}, {ClassPerf, 1}} {
		r := encodeRegReq(tc.class)
		if r[umadRegQPN] != tc.qpn || r[umadRegClass] != tc.class || r[umadRegVersion] != 1 || r[umadRegRMPP] != 0 {
			t.Errorf("register request for class 0x%02x: % x", tc.class, r)
		}
	}
}

// TestUmadPorts reads a sysfs tree laid out like the kernel's
// class/infiniband_mad (drivers/infiniband/core/user_mad.c: abi_version,
// umadN/ibdev, umadN/port).
func TestUmadPorts(t *testing.T) {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, "class", "infiniband_mad", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("abi_version", "5")
	write("umad0/ibdev", "mlx5_0")
	write("umad0/port", "1")
	write("umad1/ibdev", "mlx5_1")
	write("umad1/port", "1")
	ports, err := UmadPorts(root, "/dev/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 2 || ports[1] != (UmadPort{Device: "mlx5_1", Port: 1, Path: "/dev/infiniband/umad1"}) {
		t.Errorf("%+v", ports)
	}
	write("abi_version", "6")
	if _, err := UmadPorts(root, "/dev/infiniband"); err == nil || !strings.Contains(err.Error(), "ABI version") {
		t.Errorf("ABI 6: %v, want an ABI version error", err)
	}
}
