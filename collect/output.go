package collect

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// identity writes the files that identify the host.
func (c *collector) identity() {
	if c.src.Identity == nil {
		return
	}
	for _, f := range c.src.Identity() {
		if f.Err != nil {
			c.b.unreadableErr(f.Source, f.Err)
			continue
		}
		c.b.add(f.Name, f.Source, f.Data)
	}
}

// metricsSample writes the exporter's own /metrics into dir.
func (c *collector) metricsSample(ctx context.Context, dir string) {
	src := "curl " + c.cfg.URL
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommandTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		c.b.unreadableErr(src, err)
		return
	}
	// The text format: the exposition a human reads and promtool checks.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.b.unreadable(src, fmt.Sprintf("no exporter answered: %v", err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.b.unreadable(src, "HTTP "+resp.Status)
		return
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.Limits.MaxFileSize)+1))
	if err != nil {
		c.b.unreadableErr(src, err)
		return
	}
	c.b.add(name(dir, "metrics.txt"), src, data)
}

// finish adds manifest.json, the last file.
func (b *Bundle) finish() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the sources are shell commands: keep && readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(b.Manifest); err != nil {
		return fmt.Errorf("encoding the manifest: %w", err)
	}
	b.Files[ManifestFile] = buf.Bytes()
	return nil
}

// names returns the bundle's file names, sorted.
func (b *Bundle) names() []string {
	out := make([]string, 0, len(b.Files))
	for n := range b.Files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Write writes the bundle to out: a .tar.gz/.tgz archive with one
// top-level directory named after it, or else a directory, which must
// not exist or be empty. Both are readable by their owner only (mode
// 0600, directories 0700): a bundle holds the kernel log, which
// kernel.dmesg_restrict keeps from other users. Files are created, never opened through a
// symbolic link or over an existing file; an archive is written to a
// temporary file beside it and renamed into place. The archive is
// deterministic: members in name order, fixed modes and owners, every
// time mtime.
func (b *Bundle) Write(out string, mtime time.Time) error {
	if err := b.finish(); err != nil {
		return err
	}
	if strings.HasSuffix(out, ".tar.gz") || strings.HasSuffix(out, ".tgz") {
		return b.writeTarGz(out, mtime)
	}
	return b.writeDir(out)
}

// writeDir writes the files into directory out.
func (b *Bundle) writeDir(out string) error {
	if err := os.Mkdir(out, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	st, err := os.Lstat(out)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", out)
	}
	if ents, err := os.ReadDir(out); err != nil || len(ents) > 0 {
		if err == nil {
			err = fmt.Errorf("%s is not empty", out)
		}
		return err
	}
	for _, n := range b.names() {
		p := filepath.Join(out, filepath.FromSlash(n))
		if d := filepath.Dir(p); d != out {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, werr := f.Write(b.Files[n])
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return fmt.Errorf("writing %s: %w", p, werr)
		}
	}
	return nil
}

// writeTarGz writes the archive out through a temporary file beside it.
func (b *Bundle) writeTarGz(out string, mtime time.Time) error {
	top := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(out), ".tar.gz"), ".tgz")
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return fmt.Errorf("creating the archive: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	if err := b.writeArchive(tmp, top, mtime); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%s exists", out)
	}
	return os.Rename(tmp.Name(), out)
}

// writeArchive writes the bundle as a gzip-compressed tar stream with the
// top-level directory top.
func (b *Bundle) writeArchive(w io.Writer, top string, mtime time.Time) error {
	mtime = mtime.UTC().Truncate(time.Second)
	zw := gzip.NewWriter(w) // no name or time in the gzip header
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	addDir := func(d string) error {
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	if err := addDir(top); err != nil {
		return err
	}
	for _, n := range b.names() {
		if d := path.Dir(n); d != "." {
			if err := addDir(top + "/" + d); err != nil {
				return err
			}
		}
		data := b.Files[n]
		h := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + n, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
