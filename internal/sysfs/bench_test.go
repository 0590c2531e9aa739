package sysfs

import (
	"os"
	"path"
	"testing"
)

// benchStatistics returns the statistics files of this machine's
// interfaces (/sys/class/net/*/statistics/*), the kind of attribute the
// collectors read by the thousand, or skips without sysfs.
func benchStatistics(b *testing.B) (dirs []string, names [][]string) {
	ifs, err := os.ReadDir("/sys/class/net")
	if err != nil {
		b.Skip("no /sys/class/net")
	}
	for _, i := range ifs {
		dir := path.Join("class/net", i.Name(), "statistics")
		ents, err := os.ReadDir(path.Join("/sys", dir))
		if err != nil {
			continue
		}
		var ns []string
		for _, e := range ents {
			ns = append(ns, e.Name())
		}
		dirs, names = append(dirs, dir), append(names, ns)
	}
	return dirs, names
}

// BenchmarkAttrRead reads every statistics file of /sys/class/net once
// per iteration: by path (ResolveAttr) and relative to the directory's
// descriptor (Dir.Attr), which spares the kernel the walk through the
// class directory's symbolic link.
func BenchmarkAttrRead(b *testing.B) {
	dirs, names := benchStatistics(b)
	fsys := DirFS("/sys")
	var byPath, byDir []Attr
	for i, dir := range dirs {
		d, err := OpenDir(fsys, dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { d.Close() })
		for _, n := range names[i] {
			p, err := ResolveAttr(fsys, path.Join(dir, n))
			if err != nil {
				b.Fatal(err)
			}
			a, err := d.Attr(n)
			if err != nil {
				b.Fatal(err)
			}
			byPath, byDir = append(byPath, p), append(byDir, a)
		}
	}
	buf := make([]byte, 4096)
	for _, bc := range []struct {
		name  string
		attrs []Attr
	}{{"path", byPath}, {"dir", byDir}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				for _, a := range bc.attrs {
					if _, err := a.Read(buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(bc.attrs)), "files")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(bc.attrs)), "ns/file")
		})
	}
}
