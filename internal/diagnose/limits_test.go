package diagnose

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
)

// zeros is an endless source of zero bytes that counts what was read.
type zeros struct{ n *atomic.Int64 }

func (z zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n.Add(int64(len(p)))
	return len(p), nil
}

// streamArchive writes, into a pipe, a gzip-compressed tar whose first
// member is named name and declares size bytes of zeros, generated as
// they are compressed (gzip of zeros is about 1000:1), followed by a
// small valid bundle. It returns the reading end, the count of zero
// bytes generated so far and a function that closes the pipe and waits
// for the writer.
func streamArchive(t *testing.T, name string, size int64) (io.Reader, *atomic.Int64, func()) {
	t.Helper()
	pr, pw := io.Pipe()
	var generated atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		zw := gzip.NewWriter(pw)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
		if err == nil {
			_, err = io.CopyN(tw, zeros{&generated}, size)
		}
		for _, m := range []struct{ name, data string }{{"b/", ""}, {"b/README", "a bundle\n"}} {
			if err != nil {
				break
			}
			h := &tar.Header{Name: m.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(m.data))}
			if strings.HasSuffix(m.name, "/") {
				h.Typeflag, h.Mode = tar.TypeDir, 0o755
			}
			if err = tw.WriteHeader(h); err == nil {
				_, err = io.WriteString(tw, m.data)
			}
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	stop := func() {
		pr.CloseWithError(errors.New("reader done"))
		<-done
	}
	t.Cleanup(stop)
	return pr, &generated, stop
}

// TestEveryMemberCounted checks that a member named "." (which the
// reader skips as the archive's own directory) counts against the total
// and file limits like any other, so its bytes are refused from its
// header instead of being decompressed.
func TestEveryMemberCounted(t *testing.T) {
	lim := Limits{MaxFileSize: 1 << 20, MaxFiles: 100, MaxTotal: 4 << 20}
	for _, name := range []string{".", "./."} {
		t.Run(name, func(t *testing.T) {
			const declared = 256 << 20
			r, generated, stop := streamArchive(t, name, declared)
			_, err := readTarGz("dot.tgz", r, lim)
			stop()
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "268435456 bytes") {
				t.Errorf("err %v, want the member refused for its 268435456 bytes", err)
			}
			// The reader stopped at the header: the generator ran ahead
			// only by what the pipe and the compressor buffer.
			if g := generated.Load(); g > 2*lim.MaxTotal {
				t.Errorf("%d bytes of the member generated before the archive was refused, want at most %d", g, 2*lim.MaxTotal)
			}
		})
	}
}
