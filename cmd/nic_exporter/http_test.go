package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// dialSmallWindow connects to addr with a 4 KiB receive buffer, so that a
// client that does not read stalls the server's writes soon.
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// scrapeStatus scrapes /metrics once and returns the status and body.
func scrapeStatus(t *testing.T, addr string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// sampleValue returns the value of the sample line that starts with
// series in a text-format scrape, or -1.
func sampleValue(scrape, series string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// TestStalledScrapersFreeTheirSlots starts as many scrapes of the built
// binary as --web.max-requests from clients that pipeline many GET
// /metrics over real TCP and never read. They used to hold every slot
// until the write timeout, and scrapes were refused meanwhile; now a
// slot is freed once the answer is prepared, so scrapes are answered
// while they stall, and the self-metrics count their write timeouts.
func TestStalledScrapersFreeTheirSlots(t *testing.T) {
	const slots = 4
	e := start(t, append([]string{"--web.max-requests=" + strconv.Itoa(slots), "--web.write-timeout=3s"}, demoArgs...)...)
	// The demo's answer (300 KB) fits in the socket buffers; 64
	// pipelined requests do not, so each connection stalls a handler.
	pipeline := strings.Repeat("GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n", 64)
	for i := 0; i < slots; i++ {
		conn := dialSmallWindow(t, e.addr)
		if _, err := io.WriteString(conn, pipeline); err != nil {
			t.Fatal(err)
		}
		// The first bytes of the first answer: the server is writing to
		// this connection.
		status := make([]byte, len("HTTP/1.1 200"))
		if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
			t.Fatalf("stalled client %d: %q, %v", i, status, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the buffers fill in milliseconds
	if code, body := scrapeStatus(t, e.addr); code != http.StatusOK {
		t.Fatalf("a scrape while %d stalled clients are in flight: status %d, want 200: %.200s", slots, code, body)
	}
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		code, body := scrapeStatus(t, e.addr)
		if code != http.StatusOK {
			t.Fatalf("a scrape while stalled clients are in flight: status %d, want 200", code)
		}
		if v := sampleValue(body, `nic_exporter_scrapes_failed_total{profile="default",reason="write_timeout"}`); v >= slots {
			if r := sampleValue(body, `nic_exporter_scrapes_failed_total{profile="default",reason="rejected"}`); r != 0 {
				t.Errorf("rejected scrapes counted: %v, want 0", r)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled scrapes' write timeouts were not counted")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPTimeouts checks that an idle keep-alive connection and one
// whose request headers never end are closed after their timeouts.
func TestHTTPTimeouts(t *testing.T) {
	e := start(t, "--demo", "--web.idle-timeout=1s", "--web.read-header-timeout=1s")
	closedWithin := func(conn net.Conn, r io.Reader, what string) {
		t.Helper()
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := r.Read(make([]byte, 1))
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Errorf("%s: connection still open after 10 s", what)
		case err == nil:
			t.Errorf("%s: unexpected data from the server", what)
		case time.Since(start) > 5*time.Second:
			t.Errorf("%s: closed only after %s", what, time.Since(start))
		}
	}

	idle := dialSmallWindow(t, e.addr)
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatalf("the server did not keep the connection alive")
	}
	closedWithin(idle, br, "idle keep-alive connection with --web.idle-timeout=1s")

	partial := dialSmallWindow(t, e.addr)
	if _, err := io.WriteString(partial, "GET /metrics HTTP/1.1\r\nHost: exporter\r\n"); err != nil {
		t.Fatal(err)
	}
	closedWithin(partial, partial, "request headers never ended, --web.read-header-timeout=1s")
}

// TestHTTPErrorLogThroughZap provokes one of net/http's own error lines
// (a plain HTTP request to the TLS port) and checks that it comes out as
// a JSON log line like every other, not as plain text.
func TestHTTPErrorLogThroughZap(t *testing.T) {
	dir := t.TempDir()
	writeSelfSignedCert(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &exporter{addr: freePort(t), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	e.cmd = startCmd(t, e, "--web.config.file="+cfg, "--log.format=json", "--demo")
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", e.addr)
		if err == nil {
			_, _ = io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n")
			reply, _ := io.ReadAll(conn)
			conn.Close()
			if strings.Contains(string(reply), "HTTPS server") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS listener within 20 s:\n%s", e.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	line := regexp.MustCompile(`(?m)^.*TLS handshake error.*$`)
	for {
		if m := line.FindString(e.stderr.String()); m != "" {
			if !strings.HasPrefix(m, `{"time":`) || !strings.Contains(m, `"level":"WARN"`) || !strings.Contains(m, `"component":"http"`) {
				t.Errorf("net/http error line not logged through zap as JSON: %s", m)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS handshake error logged:\n%s", e.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSHandshakeErrorsRateLimited sends 300 plain HTTP requests to the
// TLS listener, each on a connection of its own, and counts net/http's
// "TLS handshake error" lines in the log up to the exit: they used to be
// one WARN line per connection (3,000 lines, 617 KB, in 0.1 s), and are
// now logged like failed scrapes, at most once a minute per kind with
// the number not logged in between. Every client still gets its 400.
func TestTLSHandshakeErrorsRateLimited(t *testing.T) {
	const clients = 300
	dir := t.TempDir()
	writeSelfSignedCert(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &exporter{addr: freePort(t), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	e.cmd = startCmd(t, e, "--web.config.file="+cfg, "--demo")
	plain := func() (string, error) {
		conn, err := net.Dial("tcp", e.addr)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
			return "", err
		}
		reply, err := io.ReadAll(conn)
		return string(reply), err
	}
	deadline := time.Now().Add(testenv.HangGuard)
	for {
		if reply, _ := plain(); strings.Contains(reply, "HTTPS server") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS listener:\n%s", e.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range clients {
		reply, err := plain()
		if err != nil || !strings.Contains(reply, "400 Bad Request") {
			t.Fatalf("plain HTTP client %d: %q, %v; want a 400", i, reply, err)
		}
	}
	// Up to the exit: the server logs a handshake error before it lets
	// go of the connection, and the shutdown waits for the connections.
	log := stopForLog(t, e)
	lines := regexp.MustCompile(`(?m)^.*TLS handshake error.*$`).FindAllString(log, -1)
	if len(lines) != 1 {
		t.Errorf("%d TLS handshake error lines for %d plain HTTP connections, want 1 (rate-limited)", len(lines), clients+1)
	}
	if len(lines) > 0 && (!strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "component=http")) {
		t.Errorf("TLS handshake error not logged through zap at warn level: %s", lines[0])
	}
}

// writeSelfSignedCert writes a self-signed certificate for 127.0.0.1 and
// its key as PEM files.
func writeSelfSignedCert(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "nic_exporter test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCustomTelemetryPath serves the metrics under a nested path, keeps
// the landing page at / and 404s the default path.
func TestCustomTelemetryPath(t *testing.T) {
	e := start(t, "--demo", "--web.telemetry-path=/prom/metrics")
	body, _ := e.get(t, "/prom/metrics", nil)
	if !strings.Contains(body, "nic_exporter_collector_up{") {
		t.Errorf("no metrics under /prom/metrics")
	}
	landing, _ := e.get(t, "/", nil)
	if !strings.Contains(landing, `href="/prom/metrics"`) {
		t.Errorf("the landing page does not link to /prom/metrics:\n%s", landing)
	}
	resp, err := http.Get("http://" + e.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics with --web.telemetry-path=/prom/metrics: %s, want 404", resp.Status)
	}
}
