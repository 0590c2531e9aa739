package diagnose

import (
	"path"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collector"
	"github.com/nic-exporter/nic_exporter/collector/exposition"
	"github.com/nic-exporter/nic_exporter/collector/vma"
	"github.com/nic-exporter/nic_exporter/vmastats"
	"github.com/nic-exporter/nic_exporter/xliostats"
)

// Kinds of the applications' shared-memory statistics files that
// `nic_exporter collect` copies under their own names (vma/vmastat.PID,
// xlio/xliostat.PID), as libvma and libxlio write them.
const (
	// KindVMAStats is a libvma statistics file, vmastat.<pid>.
	KindVMAStats = "libvma statistics (vmastat.PID)"
	// KindXLIOStats is a libxlio statistics file, xliostat.<pid>.
	KindXLIOStats = "libxlio statistics (xliostat.PID)"
)

// statsKind returns the kind of a file named as a statistics file, or
// "". The files are binary: they are recognised by name only, and never
// given to the text recognisers or counted against the text limits.
func statsKind(name string) string {
	base := path.Base(name)
	if _, ok := vmastats.ParseName(base); ok {
		return KindVMAStats
	}
	if _, ok := vmastats.ParseNameWithPrefix(base, xliostats.FilePrefix); ok {
		return KindXLIOStats
	}
	return ""
}

// statsFile is one decoded statistics file of a sample, with its writer
// as collect's manifest names it.
type statsFile struct {
	name string
	vma  *vmastats.Stats
	xlio *xliostats.Stats
	proc vmastats.Process
	// handshake is whether collect made the reader handshake before it
	// read the file.
	handshake bool
}

// parseStats decodes a statistics file with the library's own decoder,
// the one the vma and xlio collectors use (vmastats.Parse,
// xliostats.Parse); a file that does not decode is an error of that
// file alone.
func parseStats(name, kind string, data []byte) (statsFile, error) {
	sf := statsFile{name: name, handshake: true}
	prefix := vmastats.FilePrefix
	var err error
	if kind == KindVMAStats {
		sf.vma, err = vmastats.Parse(data)
	} else {
		prefix = xliostats.FilePrefix
		sf.xlio, err = xliostats.Parse(data)
	}
	sf.proc.PID, _ = vmastats.ParseNameWithPrefix(path.Base(name), prefix)
	return sf, err
}

// resolveStatsProcesses gives the statistics files of one sample the
// writers collect's manifest names (by the file's name in the bundle,
// dir+name): pid, comm, start time and whether the reader handshake was
// made. A file the manifest does not describe (copied by hand) keeps the
// pid of its name, no comm, and counts as read with the handshake:
// diagnose cannot tell, and NICVMAStatsStale on a guess would mislead.
func resolveStatsProcesses(files []statsFile, m *collectManifest, dir string) {
	if m == nil || len(files) == 0 {
		return
	}
	procs := map[string]*manifestProcess{}
	for _, f := range m.Files {
		if f.Process != nil {
			procs[f.Name] = f.Process
		}
	}
	for i := range files {
		p := procs[dir+files[i].name]
		if p == nil {
			continue
		}
		files[i].proc = vmastats.Process{PID: p.PID, Comm: p.Comm}
		if t, err := time.Parse(time.RFC3339Nano, p.Start); err == nil {
			files[i].proc.Start = t
		}
		files[i].handshake = p.Handshake
	}
}

// statsSnapshots runs the daemon's vma and xlio collectors over the
// decoded statistics files of a sample (Config.Loaded), so the series
// are the ones the daemon exports from the same files.
func statsSnapshots(files []statsFile, log *zap.Logger) ([]*exposition.Snapshot, error) {
	vmaFiles := map[string]*vmastats.Loaded{}
	xlioFiles := map[string]*xliostats.Loaded{}
	for _, f := range files {
		if f.vma != nil {
			vmaFiles[f.name] = &vmastats.Loaded{Stats: f.vma, Process: f.proc, Handshake: f.handshake}
		} else {
			xlioFiles[f.name] = &xliostats.Loaded{Stats: f.xlio, Process: f.proc, Handshake: f.handshake}
		}
	}
	var cs []collector.Collector
	if len(vmaFiles) > 0 {
		cs = append(cs, vma.New(vma.Config{Loaded: func() map[string]*vmastats.Loaded { return vmaFiles }}, log))
	}
	if len(xlioFiles) > 0 {
		cs = append(cs, vma.NewXLIO(vma.XLIOConfig{Loaded: func() map[string]*xliostats.Loaded { return xlioFiles }}, log))
	}
	var snaps []*exposition.Snapshot
	for _, c := range cs {
		s, err := poll(c, log)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}

// manifestProcess is what collect's manifest says of the writer of a
// statistics file (collect.ProcessEntry).
type manifestProcess struct {
	PID       int    `json:"pid"`
	Comm      string `json:"comm"`
	Start     string `json:"start"`
	Handshake bool   `json:"reader_handshake"`
}

// statsEvidenceKey is the evidence key of the statistics file of one
// process: its library's series prefix and its pid.
func statsEvidenceKey(lib string, pid int) string {
	return "stats\x00" + lib + "\x00" + strconv.Itoa(pid)
}

// addStatsEvidence records the file each process's statistics were read
// from. The files are binary: the evidence names the file.
func addStatsEvidence(files []statsFile, evidence map[string]string) {
	for _, f := range files {
		lib := "nic_xlio_"
		if f.vma != nil {
			lib = "nic_vma_"
		}
		evidence[statsEvidenceKey(lib, f.proc.PID)] = f.name
	}
}

// statsEvidence returns the statistics file a vma or xlio collector
// series of a process was read from.
func statsEvidence(lbls map[string]string, evidence map[string]string) (string, bool) {
	pid, err := strconv.Atoi(lbls["pid"])
	if err != nil {
		return "", false
	}
	for _, lib := range []string{"nic_vma_", "nic_xlio_"} {
		if strings.HasPrefix(lbls["__name__"], lib) {
			at, ok := evidence[statsEvidenceKey(lib, pid)]
			return at, ok
		}
	}
	return "", false
}
