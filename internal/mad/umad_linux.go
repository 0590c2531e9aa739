package mad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's user MAD ABI, include/uapi/rdma/ib_user_mad.h, version 5.
// TestUmadLayout checks these against the header compiled with gcc.
const (
	umadABIVersion = 5
	// umadHdrSize is sizeof(struct ib_user_mad_hdr), the header in front
	// of each MAD once IB_USER_MAD_ENABLE_PKEY is set.
	umadHdrSize = 64
	// umadRegReqSize is sizeof(struct ib_user_mad_reg_req).
	umadRegReqSize = 28
	// The ioctls: _IOWR(0x1b, 1, struct ib_user_mad_reg_req),
	// _IOW(0x1b, 2, __u32) and _IO(0x1b, 3).
	umadRegisterAgent   = 0xc01c1b01
	umadUnregisterAgent = 0x40041b02
	umadEnablePKey      = 0x00001b03
	// Offsets in struct ib_user_mad_hdr.
	umadHdrID        = 0
	umadHdrStatus    = 4
	umadHdrTimeoutMS = 8
	umadHdrRetries   = 12
	umadHdrQPN       = 20
	umadHdrQKey      = 24
	umadHdrLID       = 28
	umadHdrPKeyIndex = 56
	// Offsets in struct ib_user_mad_reg_req.
	umadRegQPN     = 20
	umadRegClass   = 21
	umadRegVersion = 22
	umadRegOUI     = 23
	umadRegRMPP    = 26
	// gsiQKey is the well-known Q_Key of QP1.
	gsiQKey = 0x80010000
)

// UmadConfig configures a UmadTransport.
type UmadConfig struct {
	// Device is the character device, such as /dev/infiniband/umad0.
	Device string
	// TimeoutMS and Retries are handed to the kernel, which resends a
	// request that got no response and finally gives it back with
	// ETIMEDOUT. Zero TimeoutMS means 100 ms.
	TimeoutMS uint32
	Retries   uint32
}

// UmadTransport sends MADs through the kernel's user MAD interface,
// /dev/infiniband/umadN, one device per local HCA port. It registers one
// agent per management class it sends (directed-route and LID-routed SMPs
// on QP0, Performance Management on QP1); as a pure requester it receives
// only the responses to its own requests. Opening the device needs read
// and write access to it (root, or a udev rule).
type UmadTransport struct {
	f      *os.File
	cfg    UmadConfig
	mu     sync.Mutex
	agents map[uint8]uint32 // management class -> agent id
}

// UmadPort is one local HCA port and its umad device.
type UmadPort struct {
	// Device and Port name the HCA port (mlx5_0, 1).
	Device string
	Port   uint8
	// Path is the character device, /dev/infiniband/umadN.
	Path string
}

// UmadPorts lists the local HCA ports that have a umad device, from
// sysfs (<sysfs>/class/infiniband_mad). It checks the ABI version first.
func UmadPorts(sysfs, devDir string) ([]UmadPort, error) {
	dir := filepath.Join(sysfs, "class", "infiniband_mad")
	abi, err := os.ReadFile(filepath.Join(dir, "abi_version"))
	if err != nil {
		return nil, fmt.Errorf("reading the user MAD ABI version: %w", err)
	}
	if v, err := strconv.Atoi(strings.TrimSpace(string(abi))); err != nil || v != umadABIVersion {
		return nil, fmt.Errorf("user MAD ABI version %q in %s, want %d", strings.TrimSpace(string(abi)), dir, umadABIVersion)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []UmadPort
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "umad") {
			continue
		}
		dev, err1 := os.ReadFile(filepath.Join(dir, e.Name(), "ibdev"))
		port, err2 := os.ReadFile(filepath.Join(dir, e.Name(), "port"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		p, err := strconv.ParseUint(strings.TrimSpace(string(port)), 10, 8)
		if err != nil {
			return nil, fmt.Errorf("%s/port: %w", e.Name(), err)
		}
		out = append(out, UmadPort{Device: strings.TrimSpace(string(dev)), Port: uint8(p), Path: filepath.Join(devDir, e.Name())})
	}
	return out, nil
}

// OpenUmad opens a umad device and switches it to the 64-byte header.
func OpenUmad(cfg UmadConfig) (*UmadTransport, error) {
	if cfg.TimeoutMS == 0 {
		cfg.TimeoutMS = 100
	}
	fd, err := unix.Open(cfg.Device, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", cfg.Device, err)
	}
	if err := ioctl(fd, umadEnablePKey, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: IB_USER_MAD_ENABLE_PKEY: %w", cfg.Device, err)
	}
	// Non-blocking, so os.File uses the poller and Close unblocks Read.
	return &UmadTransport{f: os.NewFile(uintptr(fd), cfg.Device), cfg: cfg, agents: map[uint8]uint32{}}, nil
}

func ioctl(fd int, req, arg uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg); e != 0 {
		return e
	}
	return nil
}

// encodeRegReq builds a struct ib_user_mad_reg_req for a requester of
// the given class.
func encodeRegReq(class uint8) []byte {
	b := make([]byte, umadRegReqSize)
	if class != ClassSubnLID && class != ClassSubnDirected {
		b[umadRegQPN] = 1
	}
	b[umadRegClass] = class
	b[umadRegVersion] = 1
	// OUI 00:14:05 as libibumad sets it; used by vendor classes only.
	b[umadRegOUI], b[umadRegOUI+1], b[umadRegOUI+2] = 0x00, 0x14, 0x05
	b[umadRegRMPP] = 0
	return b
}

// agent returns the agent id for class, registering it on first use.
func (t *UmadTransport) agent(class uint8) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.agents[class]; ok {
		return id, nil
	}
	req := encodeRegReq(class)
	sc, err := t.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		ierr = ioctl(int(fd), umadRegisterAgent, uintptr(unsafe.Pointer(&req[0])))
	}); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, fmt.Errorf("%s: IB_USER_MAD_REGISTER_AGENT for class 0x%02x: %w", t.cfg.Device, class, ierr)
	}
	id := binary.NativeEndian.Uint32(req[0:4])
	t.agents[class] = id
	return id, nil
}

// encodeUmad builds the 64-byte header and the MAD as one write.
func (t *UmadTransport) encodeUmad(agent uint32, dlid uint16, qp uint32, mad []byte) []byte {
	b := make([]byte, umadHdrSize+len(mad))
	binary.NativeEndian.PutUint32(b[umadHdrID:], agent)
	binary.NativeEndian.PutUint32(b[umadHdrTimeoutMS:], t.cfg.TimeoutMS)
	binary.NativeEndian.PutUint32(b[umadHdrRetries:], t.cfg.Retries)
	binary.BigEndian.PutUint32(b[umadHdrQPN:], qp)
	if qp != 0 {
		binary.BigEndian.PutUint32(b[umadHdrQKey:], gsiQKey)
	}
	binary.BigEndian.PutUint16(b[umadHdrLID:], dlid)
	binary.NativeEndian.PutUint16(b[umadHdrPKeyIndex:], 0)
	copy(b[umadHdrSize:], mad)
	return b
}

// Send implements Transport.
func (t *UmadTransport) Send(dlid uint16, qp uint32, mad []byte) error {
	if len(mad) != MADSize {
		return fmt.Errorf("MAD of %d bytes, want %d", len(mad), MADSize)
	}
	agent, err := t.agent(mad[1])
	if err != nil {
		return err
	}
	_, err = t.f.Write(t.encodeUmad(agent, dlid, qp, mad))
	return err
}

// Recv implements Transport.
func (t *UmadTransport) Recv(buf []byte) (int, bool, error) {
	b := make([]byte, umadHdrSize+MADSize)
	for {
		n, err := t.f.Read(b)
		if err != nil {
			return 0, false, err
		}
		if n < umadHdrSize+24 {
			continue
		}
		status := binary.NativeEndian.Uint32(b[umadHdrStatus:])
		return copy(buf, b[umadHdrSize:n]), status == uint32(unix.ETIMEDOUT), nil
	}
}

// Close unregisters the agents and closes the device.
func (t *UmadTransport) Close() error {
	t.mu.Lock()
	ids := make([]uint32, 0, len(t.agents))
	for _, id := range t.agents {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	if sc, err := t.f.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			for _, id := range ids {
				v := id
				_ = ioctl(int(fd), umadUnregisterAgent, uintptr(unsafe.Pointer(&v)))
			}
		})
	}
	return t.f.Close()
}
