package mad

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The ibsim wire format (ibsim's include/ibsim.h, 0.10 to 0.12). Its
// integers are in the host's byte order except where noted; ibsim runs
// on little-endian hosts, so this encodes little-endian.
const (
	simMagic          = 0xdeadbeef
	simCtlSize        = 80  // struct sim_ctl: magic, clientid, type, len, data[64]
	simRequestSize    = 288 // struct sim_request: dlid, slid, dqp, sqp, status, pad, length, mad[256]
	simCtlError       = 0
	simCtlConnect     = 1
	simCtlDisconnect  = 2
	simCtlGetPort     = 3
	simStatusTimedOut = 110 // ETIMEDOUT: ibsim dropped the packet
	simDefaultName    = "sim"
)

// SimConfig configures a SimTransport.
type SimConfig struct {
	// SockName is ibsim's socket base name; empty means $IBSIM_SOCKNAME,
	// or "sim" as in ibsim's own client library.
	SockName string
	// Node is the simulated node to attach at, by its name in the net
	// file; empty means $SIM_HOST, or when that is empty too ibsim's
	// default node (the first in the net file).
	Node string
	// Timeout bounds the control exchanges. Zero means 2 s.
	Timeout time.Duration
}

// SimConfigFromEnv returns the configuration ibsim's client library
// (libumad2sim) would use: IBSIM_SOCKNAME and SIM_HOST.
func SimConfigFromEnv() SimConfig {
	return SimConfig{SockName: os.Getenv("IBSIM_SOCKNAME"), Node: os.Getenv("SIM_HOST")}
}

// SimTransport speaks ibsim's local socket protocol: SOCK_DGRAM sockets in
// the abstract UNIX namespace, a control exchange to attach as a client
// at one node's first port, then 288-byte sim_request packets carrying
// the MADs. ibsim has 10 client slots and never frees an idle one, so a
// SimTransport must be closed (which detaches) and should be shared by
// all queries of a process rather than opened per query.
type SimTransport struct {
	ctl     *net.UnixConn
	data    *net.UnixConn
	out     *net.UnixAddr
	timeout time.Duration
	slot    uint32
	node    string
	lid     uint16

	mu     sync.Mutex // serialises control exchanges
	closed atomic.Bool
}

// simClients numbers the SimTransports of this process, so that several
// can attach at once: ibsim names a client's sockets by the id it sends,
// which its C library takes from the process ID.
var simClients atomic.Uint32

// simAddr returns an abstract socket address the way ibsim's make_name
// builds it: the length counts the terminating NUL, so the name Go must
// use ends in one.
func simAddr(format string, args ...any) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + fmt.Sprintf(format, args...) + "\x00", Net: "unixgram"}
}

// DialSim attaches to a running ibsim.
func DialSim(cfg SimConfig) (*SimTransport, error) {
	env := SimConfigFromEnv()
	if cfg.SockName == "" {
		cfg.SockName = env.SockName
	}
	if cfg.SockName == "" {
		cfg.SockName = simDefaultName
	}
	if cfg.Node == "" {
		cfg.Node = env.Node
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if len(cfg.Node) > 31 {
		return nil, fmt.Errorf("ibsim node name %q is longer than 31 bytes", cfg.Node)
	}
	// The process ID for the first client, as ibsim's own library sends,
	// then distinct ids above the largest PID (2^22).
	id := uint32(os.Getpid()) | (simClients.Add(1)-1)<<22
	ctl, err := net.DialUnix("unixgram", simAddr("%s:ctl%d", cfg.SockName, id), simAddr("%s:ctl", cfg.SockName))
	if err != nil {
		return nil, fmt.Errorf("connecting to ibsim's control socket @%s:ctl: %w", cfg.SockName, err)
	}
	data, err := net.ListenUnixgram("unixgram", simAddr("%s:in%d", cfg.SockName, id))
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("binding the ibsim data socket: %w", err)
	}
	t := &SimTransport{ctl: ctl, data: data, timeout: cfg.Timeout}
	// struct sim_client_info { u32 id; u32 qp; u32 issm; char nodeid[32]; }
	info := make([]byte, 44)
	binary.LittleEndian.PutUint32(info[0:4], id)
	copy(info[12:43], cfg.Node)
	reply, err := t.control(simCtlConnect, 0, info)
	if err != nil {
		t.closeSockets()
		return nil, fmt.Errorf("attaching to ibsim at node %q: %w", cfg.Node, err)
	}
	t.slot = binary.LittleEndian.Uint32(reply[0:4])
	node := reply[12:44]
	if i := bytes.IndexByte(node, 0); i >= 0 {
		node = node[:i]
	}
	t.node = string(node)
	t.out = simAddr("%s:out%d", cfg.SockName, t.slot)
	// struct sim_port { u16 lid; u8 state; }
	if port, err := t.control(simCtlGetPort, t.slot, nil); err == nil {
		t.lid = binary.LittleEndian.Uint16(port[0:2])
	}
	return t, nil
}

// control does one request/reply exchange on the control socket and
// returns the reply's data.
func (t *SimTransport) control(typ, client uint32, data []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := make([]byte, simCtlSize)
	binary.LittleEndian.PutUint32(b[0:4], simMagic)
	binary.LittleEndian.PutUint32(b[4:8], client)
	binary.LittleEndian.PutUint32(b[8:12], typ)
	binary.LittleEndian.PutUint32(b[12:16], uint32(len(data)))
	copy(b[16:], data)
	if err := t.ctl.SetDeadline(time.Now().Add(t.timeout)); err != nil {
		return nil, err
	}
	if _, err := t.ctl.Write(b); err != nil {
		return nil, err
	}
	n, err := t.ctl.Read(b)
	if err != nil {
		return nil, err
	}
	if n != simCtlSize || binary.LittleEndian.Uint32(b[0:4]) != simMagic {
		return nil, fmt.Errorf("malformed control reply of %d bytes", n)
	}
	if binary.LittleEndian.Uint32(b[8:12]) == simCtlError {
		return nil, errors.New("ibsim refused the request (no such node, or all 10 client slots taken)")
	}
	return b[16:], nil
}

// Node returns the name of the simulated node the transport is attached
// at, as ibsim reports it.
func (t *SimTransport) Node() string { return t.node }

// LID returns the LID of the attached port when it was attached (0 before
// a subnet manager assigned one).
func (t *SimTransport) LID() uint16 { return t.lid }

// Send implements Transport.
func (t *SimTransport) Send(dlid uint16, qp uint32, mad []byte) error {
	if len(mad) != MADSize {
		return fmt.Errorf("MAD of %d bytes, want %d", len(mad), MADSize)
	}
	b := make([]byte, simRequestSize)
	// dlid holds a __be16 in the low half of a host-order u32.
	binary.BigEndian.PutUint16(b[0:2], dlid)
	// slid 0: ibsim fills in the client's LID, except for a directed
	// route, whose reply ibsim routes back by swapping dlid and slid: it
	// must be the permissive LID too, or the reply is lost ("invalid lid
	// 0").
	if dlid == permissiveLID {
		binary.BigEndian.PutUint16(b[4:6], permissiveLID)
	}
	binary.BigEndian.PutUint32(b[8:12], qp)
	binary.BigEndian.PutUint64(b[24:32], MADSize)
	copy(b[32:], mad)
	_, err := t.data.WriteToUnix(b, t.out)
	return err
}

// Recv implements Transport.
func (t *SimTransport) Recv(buf []byte) (int, bool, error) {
	b := make([]byte, simRequestSize+1)
	for {
		n, err := t.data.Read(b)
		if err != nil {
			if t.closed.Load() {
				return 0, false, net.ErrClosed
			}
			return 0, false, err
		}
		if n != simRequestSize {
			continue // ibsim never sends another size
		}
		status := binary.BigEndian.Uint32(b[16:20])
		return copy(buf, b[32:32+MADSize]), status == simStatusTimedOut, nil
	}
}

// Close detaches from ibsim, freeing the client slot, and closes the
// sockets.
func (t *SimTransport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	_, err := t.control(simCtlDisconnect, t.slot, nil)
	t.closeSockets()
	if err != nil {
		return fmt.Errorf("detaching from ibsim slot %d: %w", t.slot, err)
	}
	return nil
}

func (t *SimTransport) closeSockets() {
	t.ctl.Close()
	t.data.Close()
}
