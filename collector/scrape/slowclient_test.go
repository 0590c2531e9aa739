package scrape

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// stalledClient connects over real TCP with a small receive buffer,
// sends GET /metrics and never reads the answer, so the server's writes
// block once the socket buffers are full.
func stalledClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	return stalledClientOf(t, addr, "/metrics")
}

// stalledClientOf is stalledClient for the given path.
func stalledClientOf(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// smallBufferListener caps the kernel send buffer of each accepted
// connection at 64 KiB. Loopback autotuning otherwise lets a connection
// absorb several megabytes before a write blocks, and the test would need
// a snapshot that large to stall the server.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	}
	return c, err
}

// newSmallBufferServer serves h over loopback with small send buffers.
func newSmallBufferServer(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	return srv
}

// TestStalledClientsDoNotHoldSlots starts as many scrapes as there are
// slots from clients that send GET /metrics over loopback and never read
// the body. They used to hold every slot until the write timeout, and
// real scrapes were refused meanwhile; now a slot is freed once the
// answer is prepared, so a real scrape is answered while they stall. The
// stalled scrapes end at the write timeout, counted and logged without a
// line per scrape.
func TestStalledClientsDoNotHoldSlots(t *testing.T) {
	const slots = 64
	const writeTimeout = time.Second
	core, logs := observer.New(zap.InfoLevel)
	// About 1.3 MB uncompressed: far more than the socket buffers of a
	// client that does not read.
	h := NewHandler([]Source{fixed{snapshotOf(20_000)}}, Config{MaxConcurrent: slots, WriteTimeout: writeTimeout}, zap.New(core))
	srv := newSmallBufferServer(h)
	t.Cleanup(srv.Close) // after the clients' cleanups, which run first
	addr := strings.TrimPrefix(srv.URL, "http://")
	for i := 0; i < slots; i++ {
		stalledClient(t, addr)
	}
	deadline := time.Now().Add(testenv.HangGuard)
	for h.inflight.Load() < slots {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d stalled scrapes in flight", h.inflight.Load(), slots)
		}
		time.Sleep(5 * time.Millisecond)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || n < 1_000_000 {
		t.Fatalf("a scrape while %d stalled scrapes are in flight: status %d, %d bytes, %v; want the whole answer", slots, resp.StatusCode, n, err)
	}

	deadline = time.Now().Add(testenv.HangGuard)
	for h.Failed(ReasonWriteTimeout)+h.Failed(ReasonWriteError) < slots {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d stalled scrapes ended", h.Failed(ReasonWriteTimeout)+h.Failed(ReasonWriteError), slots)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.Failed(ReasonWriteTimeout); got != slots {
		t.Errorf("write timeouts = %d, want %d (write errors %d)", got, slots, h.Failed(ReasonWriteError))
	}
	if got := h.Rejected(); got != 0 {
		t.Errorf("rejected = %d, want 0", got)
	}
	if n := logs.FilterField(zap.String("reason", ReasonWriteTimeout)).Len(); n != 1 {
		t.Errorf("%s logged %d times, want once (rate-limited)", ReasonWriteTimeout, n)
	}
}

// TestSlowButSteadyClientCompletes checks that a client that was merely slow,
// not stalled for longer than the write timeout, still gets the whole
// answer: the deadline bounds a stall, not an ordinary scrape.
func TestSlowButSteadyClientCompletes(t *testing.T) {
	h := NewHandler([]Source{fixed{snapshotOf(20_000)}}, Config{MaxConcurrent: 1, WriteTimeout: 5 * time.Second}, zap.NewNop())
	srv := newSmallBufferServer(h)
	t.Cleanup(srv.Close) // after the clients' cleanups, which run first
	conn := stalledClient(t, strings.TrimPrefix(srv.URL, "http://"))
	time.Sleep(500 * time.Millisecond) // stalled, but for less than the timeout
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer after a short stall: %v", err)
	}
	if !strings.Contains(string(body), `nic_bench_packets_total{device="mlx5_19",queue="999"}`) {
		t.Errorf("answer incomplete: %d bytes", len(body))
	}
	if n := h.Failed(ReasonWriteTimeout) + h.Failed(ReasonWriteError); n != 0 {
		t.Errorf("%d failed scrapes, want none", n)
	}
}

// TestNeverReadingStreamDoesNotStarveScrapes runs the slot starvation
// attack: a client that opens a connection, sends GET /metrics and never
// reads, three times a second, while a scraper that reads scrapes in a
// loop. The attack used to leave most scrapes refused with 503 (27 of 30
// under the default flags): a never-reading scrape held its slot until
// the write timeout, so the attacker held rate × timeout connections, and
// the write deadline bounded each hold but not their number. At least 95%
// of the reading scraper's scrapes must be answered in whole.
//
// The default case is 64 slots, a 1 m write timeout and 3 connections a
// second: at its steady state the attacker holds 180 connections, 2.8
// times the slots, and it fills them after 21 s. Scaled to run in seconds,
// 2 slots and a 2 s timeout at the same rate give 6 connections, 3 times
// the slots, filled after 0.7 s; the 40 scrapes at 100 ms intervals run
// almost all in that steady state. The test counts scrapes; it measures
// no time.
func TestNeverReadingStreamDoesNotStarveScrapes(t *testing.T) {
	const (
		slots        = 2
		writeTimeout = 2 * time.Second
		perSecond    = 3
		maxAttackers = 300 // a bound: the attacker stops itself
		scrapes      = 40
	)
	// About 1.3 MB uncompressed: far more than the socket buffers of a
	// client that does not read.
	h := NewHandler([]Source{fixed{snapshotOf(20_000)}}, Config{MaxConcurrent: slots, WriteTimeout: writeTimeout}, zap.NewNop())
	srv := newSmallBufferServer(h)
	t.Cleanup(srv.Close) // after the attacker's connections are closed
	addr := strings.TrimPrefix(srv.URL, "http://")

	stop := make(chan struct{})
	attackDone := make(chan error, 1)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		tick := time.NewTicker(time.Second / perSecond)
		defer tick.Stop()
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			}); err != nil {
				return err
			}
			return serr
		}}
		for len(conns) < maxAttackers {
			conn, err := d.DialContext(context.Background(), "tcp", addr)
			if err != nil {
				attackDone <- err
				return
			}
			conns = append(conns, conn) // read by the cleanup after attackDone
			if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
				attackDone <- err
				return
			}
			select {
			case <-stop:
				attackDone <- nil
				return
			case <-tick.C:
			}
		}
		attackDone <- nil
	}()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	answered, maxInFlight := 0, int64(0)
	var lastErr string
	for range scrapes {
		time.Sleep(100 * time.Millisecond)
		maxInFlight = max(maxInFlight, h.inflight.Load())
		resp, err := client.Get(srv.URL + "/metrics")
		if err != nil {
			lastErr = err.Error()
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			lastErr = err.Error()
		case resp.StatusCode != http.StatusOK:
			lastErr = resp.Status
		case !strings.Contains(string(body), `nic_bench_packets_total{device="mlx5_19",queue="999"}`):
			lastErr = fmt.Sprintf("a %d-byte answer, want the whole snapshot", len(body))
		default:
			answered++
		}
	}
	close(stop)
	select {
	case err := <-attackDone:
		if err != nil {
			t.Fatalf("attacker: %v", err)
		}
	case <-time.After(testenv.HangGuard):
		t.Fatal("the attacker did not stop")
	}
	t.Logf("%d of %d scrapes answered; %d never-reading connections opened; at most %d scrapes in flight seen; last failure: %s",
		answered, scrapes, len(conns), maxInFlight, lastErr)
	if answered*100 < scrapes*95 {
		t.Errorf("%d of %d scrapes answered under %d never-reading connections a second, want at least 95%% (last failure: %s)", answered, scrapes, perSecond, lastErr)
	}
	// The attack was real: its connections stalled their handlers until
	// the write timeout.
	deadline := time.Now().Add(testenv.HangGuard)
	for h.Failed(ReasonWriteTimeout) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no never-reading scrape ran into the write timeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
