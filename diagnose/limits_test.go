package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
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

// TestWorkBounded checks that bytes within the size limits cannot
// multiply into work: files of newlines are cut after MaxFileLines and
// MaxBundleLines, a line longer than MaxLineBytes is passed over, each
// with a note, and what the analysis allocates stays near what it keeps.
func TestWorkBounded(t *testing.T) {
	lim := Limits{MaxFileSize: 8 << 20, MaxFiles: 100, MaxTotal: 64 << 20,
		MaxLineBytes: 1024, MaxFileLines: 10000, MaxBundleLines: 25000}
	fatal := "[  263.104381] mlx5_core 0000:08:00.0: mlx5_health_try_recover:330:(pid 1034): health recovery flow aborted, PCI reads still not working\n" +
		"[  263.104392] mlx5_core 0000:08:00.0: poll_health:800:(pid 0): Fatal error 1 detected\n"
	b := &Bundle{Source: "BUNDLE", Limits: lim, Files: []File{
		// A kernel log with a 4 MiB line between two real ones.
		{Name: "a_dmesg.txt", Data: []byte(fatal + "[  263.2] mlx5_core 0000:08:00.0: " + strings.Repeat("a", 4<<20) + "\n" + fatal)},
	}}
	newlines := bytes.Repeat([]byte("\n"), 4<<20)
	for i := 0; i < 8; i++ {
		b.Files = append(b.Files, File{Name: fmt.Sprintf("f%d", i), Data: newlines})
	}
	e := rules(t)
	alerts := alertRules(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := NewAnalyzer(e, alerts, nil).Analyze(b)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d lines analysed, %d bytes allocated", r.linesAnalysed, alloc)
	if alloc > 8<<20 {
		t.Errorf("the analysis allocated %d bytes for at most %d lines of at most %d bytes", alloc, lim.MaxBundleLines, lim.MaxLineBytes)
	}
	if r.linesAnalysed > lim.MaxBundleLines {
		t.Errorf("%d lines analysed, want at most %d", r.linesAnalysed, lim.MaxBundleLines)
	}
	notes := map[string]string{}
	for _, f := range r.Files {
		notes[f.Name] = f.Note
	}
	want := map[string]string{
		"a_dmesg.txt": "1 line(s) longer than 1024 bytes not analysed (line 3 first)",
		"f0":          "cut for analysis after line 10000: more than 10000 lines",
		"f1":          "cut for analysis after line 10000: more than 10000 lines",
		"f2":          "cut for analysis after line 4995: the bundle's 25000 lines are analysed",
		"f3":          "not analysed: the bundle's 25000 lines are analysed",
		"f7":          "not analysed: the bundle's 25000 lines are analysed",
	}
	for name, note := range want {
		if !strings.Contains(notes[name], note) {
			t.Errorf("%s: note %q, want %q", name, notes[name], note)
		}
	}
	// The lines around the long one are read, and keep their numbers.
	if len(r.Findings) == 0 {
		t.Errorf("no findings from the kernel log")
	}
	for _, f := range r.Findings {
		if ev := f.Evidence; !strings.HasPrefix(ev, "a_dmesg.txt:1: ") && !strings.HasPrefix(ev, "a_dmesg.txt:2: ") || !strings.HasSuffix(ev, "} = 2") {
			t.Errorf("finding %+v, want one of the first two lines, seen twice", f)
		}
	}
}

// TestTextBytesBounded checks the bundle's budget of analysed text bytes:
// lines within every line limit, each one that a kernel log rule reads
// (the rule engine is the slowest per byte), stop being analysed once the
// bundle's budget is spent, and the files after it say so. The line
// limits alone let 7 × 64 MiB of such lines through the rules (147 s).
func TestTextBytesBounded(t *testing.T) {
	lim := Limits{MaxFileSize: 8 << 20, MaxFiles: 100, MaxTotal: 64 << 20,
		MaxLineBytes: 4096, MaxFileLines: 1 << 20, MaxBundleLines: 4 << 20, MaxBundleTextBytes: 150_000}
	line := "[  263.104392] mlx5_core 0000:08:00.0: poll_health:800:(pid 0): Fatal error 1 detected " + strings.Repeat("x", 900) + "\n"
	data := []byte(strings.Repeat(line, 100)) // about 100 KB, 100 lines
	b := &Bundle{Source: "BUNDLE", Limits: lim}
	for i := 0; i < 4; i++ {
		b.Files = append(b.Files, File{Name: fmt.Sprintf("dmesg%d.txt", i), Data: data})
	}
	r := analyzer(t).Analyze(b)
	if r.textBytesAnalysed > lim.MaxBundleTextBytes {
		t.Errorf("%d bytes of text analysed, want at most %d", r.textBytesAnalysed, lim.MaxBundleTextBytes)
	}
	if r.textBytesAnalysed < len(data) {
		t.Errorf("%d bytes of text analysed, want the first file whole (%d)", r.textBytesAnalysed, len(data))
	}
	notes := map[string]string{}
	for _, f := range r.Files {
		notes[f.Name] = f.Note
	}
	// The second file gets the whole lines that fit in what the first
	// left of the budget.
	second := (lim.MaxBundleTextBytes - len(data)) / len(line)
	for name, want := range map[string]string{
		"dmesg1.txt": fmt.Sprintf("cut for analysis after line %d: the bundle's 150000 bytes of text are analysed", second),
		"dmesg2.txt": "not analysed: the bundle's 150000 bytes of text are analysed",
		"dmesg3.txt": "not analysed: the bundle's 150000 bytes of text are analysed",
	} {
		if !strings.Contains(notes[name], want) {
			t.Errorf("%s: note %q, want %q", name, notes[name], want)
		}
	}
	if notes["dmesg0.txt"] != "" {
		t.Errorf("dmesg0.txt: note %q, want none (analysed whole)", notes["dmesg0.txt"])
	}
}
