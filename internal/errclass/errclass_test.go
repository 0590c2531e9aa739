package errclass

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClassification checks every predicate and Reason on each errno the
// sources return, bare and wrapped the way they wrap them (a fs.PathError
// from os.Open, fmt.Errorf with %w).
func TestClassification(t *testing.T) {
	type want struct {
		reason                                                   string
		unsupported, attr, notExist, noDevice, perm, io, invalid bool
	}
	tests := []struct {
		name string
		err  error
		want want
	}{
		{"nil", nil, want{}},
		{"EOPNOTSUPP", syscall.EOPNOTSUPP, want{reason: "eopnotsupp", unsupported: true, attr: true}},
		{"ENOTSUP", syscall.ENOTSUP, want{reason: "eopnotsupp", unsupported: true, attr: true}},
		{"ErrUnsupported", fmt.Errorf("decoding: %w", errors.ErrUnsupported), want{reason: "other", unsupported: true, attr: true}},
		{"EINVAL from a show()", &fs.PathError{Op: "read", Path: "/sys/class/net/eth0/speed", Err: syscall.EINVAL}, want{reason: "einval", attr: true, invalid: true}},
		{"ENOENT", &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, want{reason: "enoent", notExist: true}},
		{"fs.ErrNotExist", fmt.Errorf("fake: %w", fs.ErrNotExist), want{reason: "enoent", notExist: true}},
		{"ENODEV", fmt.Errorf("ethtool: %w", syscall.ENODEV), want{reason: "enoent", notExist: true, noDevice: true}},
		{"ENXIO", syscall.ENXIO, want{reason: "enoent", notExist: true}},
		{"EPERM", syscall.EPERM, want{reason: "eacces", perm: true}},
		{"EACCES", &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, want{reason: "eacces", perm: true}},
		{"fs.ErrPermission", fmt.Errorf("fake: %w", fs.ErrPermission), want{reason: "eacces", perm: true}},
		{"EIO", fmt.Errorf("module read: %w", syscall.EIO), want{reason: "eio", io: true}},
		{"EBUSY", syscall.EBUSY, want{reason: "busy"}},
		{"ETIMEDOUT", syscall.ETIMEDOUT, want{reason: "busy"}},
		{"EAGAIN", syscall.EAGAIN, want{reason: "busy"}},
		// Errors that say nothing about the operation must not make it
		// be remembered as unsupported.
		{"EMFILE", &fs.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, want{reason: "other"}},
		{"ENFILE", syscall.ENFILE, want{reason: "other"}},
		{"ENOMEM", syscall.ENOMEM, want{reason: "other"}},
		{"EINTR", syscall.EINTR, want{reason: "other"}},
		{"parse", fmt.Errorf("%w: %q is not a counter", ErrParse, "x"), want{reason: "parse"}},
		{"plain", errors.New("something else"), want{reason: "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := want{Reason(tt.err), IsUnsupported(tt.err), IsUnsupportedAttr(tt.err), IsNotExist(tt.err),
				IsNoDevice(tt.err), IsPermission(tt.err), IsIO(tt.err), IsInvalid(tt.err)}
			if got != tt.want {
				t.Errorf("%v: got %+v, want %+v", tt.err, got, tt.want)
			}
			if tt.err != nil && !contains(Reasons, got.reason) {
				t.Errorf("Reason %q is not in Reasons %v", got.reason, Reasons)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestMemo checks remembering, the retry, Forget, Retain and Remember's
// classifier.
func TestMemo(t *testing.T) {
	now := time.Unix(1000, 0)
	m := NewMemo(MemoConfig{Retry: time.Hour, Now: func() time.Time { return now }})
	if m.Has("eth0#2", "fec") {
		t.Fatal("an empty memo remembers fec")
	}
	if m.Remember("eth0#2", "fec", syscall.EMFILE, IsUnsupported) {
		t.Error("EMFILE remembered as unsupported")
	}
	if m.Remember("eth0#2", "fec", nil, IsUnsupported) {
		t.Error("no error remembered as unsupported")
	}
	if m.Remember("eth0#2", "speed", syscall.EINVAL, IsUnsupported) {
		t.Error("EINVAL remembered for an ioctl (IsUnsupported)")
	}
	if !m.Remember("eth0#2", "speed", syscall.EINVAL, IsUnsupportedAttr) {
		t.Error("EINVAL not remembered for a sysfs attribute (IsUnsupportedAttr)")
	}
	if !m.Remember("eth0#2", "fec", fmt.Errorf("fec: %w", syscall.EOPNOTSUPP), IsUnsupported) {
		t.Error("EOPNOTSUPP not remembered")
	}
	m.Add("ib0#3", "rate")
	if !m.Has("eth0#2", "fec") || !m.Has("eth0#2", "speed") || !m.Has("ib0#3", "rate") || m.Len() != 3 {
		t.Fatalf("remembered %d, want fec and speed of eth0#2, rate of ib0#3", m.Len())
	}
	if m.Has("eth0#3", "fec") {
		t.Error("a re-created device (new identity) inherits the old one's memo")
	}
	now = now.Add(time.Hour - time.Second)
	if !m.Has("eth0#2", "fec") {
		t.Error("forgotten before the retry")
	}
	now = now.Add(time.Second)
	if m.Has("eth0#2", "fec") || m.Len() != 2 {
		t.Errorf("still remembered at the retry (%d remembered)", m.Len())
	}
	m.Add("eth0#2", "speed")
	m.Add("ib0#3", "rate")
	m.Retain(map[string]bool{"ib0#3": true})
	if m.Has("eth0#2", "speed") || !m.Has("ib0#3", "rate") {
		t.Error("Retain kept a device not in keep, or dropped one in it")
	}
	m.Forget("ib0#3")
	if m.Len() != 0 {
		t.Errorf("%d remembered after Forget", m.Len())
	}

	forever := NewMemo(MemoConfig{Now: func() time.Time { return now }})
	forever.Add("eth0#2", "fec")
	now = now.Add(1000 * time.Hour)
	if !forever.Has("eth0#2", "fec") {
		t.Error("a memo without retry forgot")
	}
}

// errnoTest matches a test of an errno value that classifies a source's
// error: what this package is for.
var errnoTest = regexp.MustCompile(`errors\.Is\([^)]*\b(syscall|unix)\.E(OPNOTSUPP|NOTSUP|INVAL|PERM|ACCES|NODEV|NXIO|NOENT|IO)\b|\berr\s*==\s*(syscall|unix)\.E(OPNOTSUPP|NOTSUP|INVAL|PERM|ACCES|NODEV|NXIO|NOENT|IO)\b`)

// TestOneClassification fails when a package of the collectors or the
// kernel helpers tests one of the classified errno values itself instead
// of asking this package. vmastats and xliostats are left out: they test
// ENOENT, EACCES and EPERM of open(2) and statx(2) on files an
// application publishes (a file that went away, a read-only mount), not
// what a kernel source supports.
func TestOneClassification(t *testing.T) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	root := filepath.Join(filepath.Dir(self), "..", "..")
	var found []string
	for _, dir := range []string{"collector", "internal", "devlink", "nodehealth"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || path == filepath.Dir(self) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if errnoTest.MatchString(line) {
					rel, _ := filepath.Rel(root, path)
					found = append(found, fmt.Sprintf("%s:%d: %s", rel, i+1, strings.TrimSpace(line)))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("%s: classify with internal/errclass instead", f)
	}
}
