package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is one file or directory of an archive: a directory when Dir is
// true, else a regular file with Data or, when Data is nil, the contents
// of the file at Src.
type entry struct {
	Name string
	Mode int64
	Dir  bool
	Data []byte
	Src  string
}

// writeTar writes entries to w as a reproducible tar: parent directories
// added where missing, entries sorted by name, owned by 0:0 without user
// or group names, every time mtime.
func writeTar(w io.Writer, entries []entry, mtime time.Time) error {
	all := map[string]entry{}
	for _, e := range entries {
		name := strings.Trim(path.Clean(e.Name), "/")
		e.Name = name
		all[name] = e
		for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if _, ok := all[dir]; !ok {
				all[dir] = entry{Name: dir, Mode: 0o755, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, name := range names {
		e := all[name]
		hdr := &tar.Header{
			Name:    name,
			Mode:    e.Mode,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		data := e.Data
		if data == nil {
			var err error
			if data, err = os.ReadFile(e.Src); err != nil {
				return err
			}
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeTarGz writes entries as a reproducible gzipped tar to file: the
// gzip header has no name and no time.
func writeTarGz(file string, entries []entry, mtime time.Time) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTar(zw, entries, mtime); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// dirEntries returns the files and directories under dir as entries named
// below prefix, keeping the permission bits.
func dirEntries(dir, prefix string) ([]entry, error) {
	var entries []entry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		name := path.Join(prefix, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			entries = append(entries, entry{Name: name, Mode: 0o755, Dir: true})
		case info.Mode().IsRegular():
			entries = append(entries, entry{Name: name, Mode: int64(info.Mode().Perm()), Src: p})
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
		return nil
	})
	return entries, err
}

// tarballName is the file name of the release tarball of arch.
func tarballName(version, arch string) string {
	return fmt.Sprintf("nic_exporter-%s.linux-%s.tar.gz", version, arch)
}

// writeTarball writes the release tarball of arch: one top-level
// directory named like the file, with the binary, LICENSE, README.md, the
// systemd unit with its environment file, sysusers.d file and VMA drop-in,
// an example web config, and the alerting half (shareFiles) in the tree
// the packages install under /usr/share/nic_exporter.
func writeTarball(cfg Config, arch, bin, file string) error {
	top := strings.TrimSuffix(tarballName(cfg.Version, arch), ".tar.gz")
	repo := func(p string) string { return filepath.Join(cfg.Root, p) }
	entries := []entry{
		{Name: top + "/nic_exporter", Mode: 0o755, Src: bin},
		{Name: top + "/LICENSE", Mode: 0o644, Src: repo("LICENSE")},
		{Name: top + "/README.md", Mode: 0o644, Src: repo("README.md")},
		{Name: top + "/CHANGELOG.md", Mode: 0o644, Src: repo("CHANGELOG.md")},
		{Name: top + "/web-config.yml", Mode: 0o644, Src: repo(webConfigExample)},
	}
	for _, f := range systemdFiles {
		entries = append(entries, entry{Name: top + "/systemd/" + f, Mode: 0o644, Src: repo("deploy/systemd/" + f)})
	}
	share, err := shareFiles(cfg.Root)
	if err != nil {
		return err
	}
	for _, f := range share {
		entries = append(entries, entry{Name: top + "/" + f.Rel, Mode: 0o644, Src: repo(f.Src)})
	}
	return writeTarGz(file, entries, cfg.Epoch)
}

// webConfigExample is the example exporter-toolkit web config shipped in
// the tarball and the packages' documentation.
const webConfigExample = "deploy/web-config.example.yml"

// systemdFiles are the files of deploy/systemd that every artifact but
// the image ships.
var systemdFiles = []string{
	"nic_exporter.service",
	"nic_exporter.default",
	"nic_exporter.sysusers",
	"vma.conf",
}
