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

// TestStalledClientsDoNotHoldSlots fills every scrape slot with clients
// that send GET /metrics over loopback and never read the body. Real
// scrapes are refused while the slots are held, and succeed again once
// the write timeout has freed them; both kinds of failure are counted
// and logged without a line per scrape.
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
	deadline := time.Now().Add(10 * time.Second)
	for h.inflight.Load() < slots {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d stalled scrapes in flight after 10 s", h.inflight.Load(), slots)
		}
		time.Sleep(5 * time.Millisecond)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	scrape := func() (int, error) {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode == 200 && n < 1_000_000 {
			err = fmt.Errorf("a %d-byte answer, want the whole snapshot", n)
		}
		return resp.StatusCode, err
	}
	refusedAt := time.Now()
	if code, err := scrape(); code != http.StatusServiceUnavailable {
		t.Fatalf("a scrape with every slot held: status %d (%v), want 503", code, err)
	}
	for {
		code, err := scrape()
		if code == 200 && err == nil {
			break
		}
		if time.Since(refusedAt) > writeTimeout+10*time.Second {
			t.Fatalf("stalled clients still hold the slots %s after a refusal with a %s write timeout: status %d, %v",
				time.Since(refusedAt).Round(time.Millisecond), writeTimeout, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The first freed slot lets a scrape through while the other stalled
	// handlers may still be finishing their own timed-out writes: wait for
	// all of them to be counted before comparing.
	countDeadline := time.Now().Add(10 * time.Second)
	for h.Failed(ReasonWriteTimeout)+h.Failed(ReasonWriteError) < slots && time.Now().Before(countDeadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.Failed(ReasonWriteTimeout); got != slots {
		t.Errorf("write timeouts = %d, want %d (write errors %d)", got, slots, h.Failed(ReasonWriteError))
	}
	if got := h.Rejected(); got < 1 {
		t.Errorf("rejected = %d, want at least 1", got)
	}
	for _, reason := range []string{ReasonRejected, ReasonWriteTimeout} {
		n := logs.FilterField(zap.String("reason", reason)).Len()
		if n != 1 {
			t.Errorf("%s logged %d times, want once (rate-limited)", reason, n)
		}
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
