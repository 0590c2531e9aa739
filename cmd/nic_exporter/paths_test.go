package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// TestExplicitPathsChecked checks that a path given on the command line
// that does not exist, or is not what its flag says, is refused naming
// the flag, that nothing blocks on a FIFO, and that paths of disabled
// collectors and the defaults are not checked.
func TestExplicitPathsChecked(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string // empty: accepted
	}{
		{nil, ""},
		{[]string{"--path.procfs=/proc", "--path.sysfs=/sys", "--collector.vma.stats-dir=" + dir, "--collector.kmsg.path=/dev/kmsg", "--collector.applog.files=" + dir + "/*.log"}, ""},
		{[]string{"--path.sysfs=" + missing}, "--path.sysfs: stat " + missing},
		{[]string{"--path.sysfs=" + dir}, "--path.sysfs: " + dir + " is not a sysfs"},
		{[]string{"--path.sysfs=" + file}, "--path.sysfs: " + file + " is not a directory"},
		{[]string{"--path.procfs=" + missing}, "--path.procfs: stat " + missing},
		{[]string{"--path.procfs=" + dir}, "--path.procfs: " + dir + " is not a procfs"},
		{[]string{"--path.procfs=" + fifo}, "--path.procfs: " + fifo + " is not a directory"},
		{[]string{"--collector.vma.stats-dir=/tmp", "--collector.vma.stats-dir=" + missing}, "--collector.vma.stats-dir: stat " + missing},
		{[]string{"--collector.vma.stats-dir=" + file}, "--collector.vma.stats-dir: " + file + " is not a directory"},
		{[]string{"--no-collector.vma", "--collector.vma.stats-dir=" + missing}, ""},
		{[]string{"--collector.kmsg.path=" + missing}, "--collector.kmsg.path: stat " + missing},
		{[]string{"--collector.kmsg.path=" + fifo}, "--collector.kmsg.path: " + fifo + " is not a character device"},
		{[]string{"--collector.kmsg.path=" + file}, "--collector.kmsg.path: " + file + " is not a character device"},
		// A character device that is not the kernel log: /dev/zero never
		// blocks, and its reader burned most of a core.
		{[]string{"--collector.kmsg.path=/dev/zero"}, "--collector.kmsg.path: /dev/zero is character device 1:5, not the kernel log (1:11)"},
		{[]string{"--collector.kmsg.path=/dev/null"}, "--collector.kmsg.path: /dev/null is character device 1:3, not the kernel log (1:11)"},
		{[]string{"--no-collector.kmsg", "--collector.kmsg.path=/dev/zero"}, ""},
		{[]string{"--collector.applog.files=" + missing + "/*.log"}, `--collector.applog.files "` + missing + `/*.log": stat ` + missing},
		{[]string{"--collector.applog.files=" + dir + "/nope*/*.log"}, "no directory matches " + dir + "/nope*"},
		{[]string{"--collector.applog.files=" + filepath.Dir(dir) + "/*/*.log"}, ""},
		// The demo reads none of the host's paths.
		{[]string{"--demo", "--collector.kmsg.path=" + missing}, ""},
	}
	for _, tt := range tests {
		_, err := daemon.ParseFlags(tt.args, io.Discard)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v, want accepted", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestWebConfigFileChecked checks that --web.config.file, which
// exporter-toolkit reads whole again at every request and TLS handshake,
// is refused at startup, naming the flag, when it or a file it names is
// no regular file or too large: a FIFO used to block every request and
// /dev/zero to grow the heap until memory ran out. Nothing blocks on the
// FIFO.
func TestWebConfigFileChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yml")
	writeSelfSignedCert(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	tlsOK := write("tls.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n")
	certZero := write("certzero.yml", "tls_server_config:\n  cert_file: /dev/zero\n  key_file: key.pem\n")
	keyFIFO := write("keyfifo.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: fifo.yml\n")
	caDir := write("cadir.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: "+dir+"\n")
	huge := write("huge.yml", "# "+strings.Repeat("x", daemon.MaxWebConfigSize)+"\n")
	bad := write("bad.yml", "basic_auth_users: [\n")
	tests := []struct {
		file string
		want string // empty: accepted
	}{
		{"", ""},
		{tlsOK, ""},
		{missing, "--web.config.file: open " + missing + ": no such file or directory"},
		{fifo, "--web.config.file: open " + fifo + ": not a regular file (named pipe)"},
		{"/dev/zero", "--web.config.file: open /dev/zero: not a regular file (character device)"},
		{dir, "--web.config.file: open " + dir + ": not a regular file (directory)"},
		{huge, "--web.config.file: read " + huge + ": file too large"},
		{bad, "--web.config.file: " + bad + ":"},
		{certZero, "--web.config.file: tls_server_config.cert_file: open /dev/zero: not a regular file (character device)"},
		{keyFIFO, "--web.config.file: tls_server_config.key_file: open " + fifo + ": not a regular file (named pipe)"},
		{caDir, "--web.config.file: tls_server_config.client_ca_file: open " + dir + ": not a regular file (directory)"},
	}
	for _, tt := range tests {
		done := make(chan error, 1)
		go func() {
			_, err := daemon.ParseFlags([]string{"--demo", "--web.config.file=" + tt.file}, io.Discard)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(testenv.HangGuard):
			t.Fatalf("--web.config.file=%s: the check blocked", tt.file)
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("--web.config.file=%s: %v, want accepted", tt.file, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("--web.config.file=%s: %v, want an error containing %q", tt.file, err, tt.want)
		}
	}
}
