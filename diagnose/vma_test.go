package diagnose

import (
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/vmastats"
)

// TestStatsFiles checks how diagnose reads the applications' statistics
// files of a bundle: by name, with the writer collect's manifest names;
// files of healthy applications give no finding; a truncated or
// malformed file gets a note of its own and costs nothing else (no
// finding, the other files' series intact).
func TestStatsFiles(t *testing.T) {
	quietVMA, quietXLIO := vmaStats(func(*vmastats.Stats) {}), xlioStats(nil, nil, nil)
	t.Run("healthy", func(t *testing.T) {
		r := analyzer(t).Analyze(reachBundle(t, map[string]string{"vma/vmastat.4242": quietVMA, "xlio/xliostat.4343": quietXLIO}))
		if len(r.Findings) != 0 {
			t.Errorf("findings %v", alertsOf(r))
		}
		kinds := map[string]string{}
		for _, f := range r.Files {
			kinds[f.Name] = f.Kind
			if f.Note != "" {
				t.Errorf("%s: note %q", f.Name, f.Note)
			}
		}
		if kinds["vma/vmastat.4242"] != KindVMAStats || kinds["xlio/xliostat.4343"] != KindXLIOStats {
			t.Errorf("kinds %v", kinds)
		}
	})
	t.Run("bad files", func(t *testing.T) {
		noBufs := vmaStats(func(s *vmastats.Stats) { s.BufferPools[0].NoBuffers = 20 })
		r := analyzer(t).Analyze(reachBundle(t, map[string]string{
			"vma/vmastat.4242":    noBufs,
			"vma/vmastat.4244":    noBufs[:len(noBufs)/2],
			"xlio/xliostat.4343":  strings.Repeat("\xff", len(quietXLIO)),
			"xlio/xliostat.4345":  "",
			"earlier/vmastat.100": "not a statistics file",
		}))
		if got := alertsOf(r); len(got) != 1 || !got["NICVMANoBuffers"] {
			t.Errorf("findings %v, want NICVMANoBuffers of the whole file alone", got)
		}
		for _, f := range r.Findings {
			if !strings.HasPrefix(f.Evidence, "vma/vmastat.4242: ") || f.Labels["pid"] != "4242" {
				t.Errorf("finding %s: evidence %q, labels %v", f.Alert, f.Evidence, f.Labels)
			}
		}
		for _, f := range r.Files {
			bad := f.Name != "vma/vmastat.4242" && f.Name != "proc_uptime"
			if bad != strings.HasPrefix(f.Note, "unparsable: ") {
				t.Errorf("%s: note %q", f.Name, f.Note)
			}
		}
	})
	t.Run("manifest", func(t *testing.T) {
		r := analyzer(t).Analyze(reachBundle(t, map[string]string{
			"vma/vmastat.4242": vmaStats(func(s *vmastats.Stats) { s.BufferPools[0].NoBuffers = 20 }),
			"manifest.json": `{"tool": "nic_exporter collect", "files": [{"name": "vma/vmastat.4242", "source": "/tmp/vmastat.4242",` +
				` "process": {"pid": 4242, "comm": "md_feed", "start": "2026-01-05T06:30:00Z", "reader_handshake": true}}]}`,
		}))
		if len(r.Findings) != 1 || r.Findings[0].Labels["comm"] != "md_feed" {
			t.Errorf("findings %+v, want NICVMANoBuffers of comm md_feed", r.Findings)
		}
	})
}

// TestStatsFilesTwoSamples checks that the earlier sample's statistics
// file gets its writer from the manifest too, so its series are the
// first observation of the later sample's: a "no buffers" count that did
// not rise between the samples is a finding only since boot (reported,
// not counted), one that rose is a finding between the samples.
func TestStatsFilesTwoSamples(t *testing.T) {
	proc := `"process": {"pid": 4242, "comm": "md_feed", "reader_handshake": true}`
	manifest := `{"tool": "nic_exporter collect", "samples": [` +
		`{"dir": "earlier_sample", "time": "2026-01-02T03:04:05Z", "uptime_seconds": 590},` +
		`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 600}], "files": [` +
		`{"name": "earlier_sample/vma/vmastat.4242", "source": "/tmp/vmastat.4242", ` + proc + `},` +
		`{"name": "vma/vmastat.4242", "source": "/tmp/vmastat.4242", ` + proc + `}]}`
	noBufs := func(n uint32) string { return vmaStats(func(s *vmastats.Stats) { s.BufferPools[0].NoBuffers = n }) }
	for _, tc := range []struct {
		earlier, later uint32
		view           string
	}{{20, 20, ViewSinceBootOnly}, {20, 25, ViewBetweenSamples}} {
		r := analyzer(t).Analyze(reachBundle(t, map[string]string{"manifest.json": manifest,
			"earlier_sample/vma/vmastat.4242": noBufs(tc.earlier), "vma/vmastat.4242": noBufs(tc.later)}))
		var views []string
		for _, f := range r.Findings {
			if f.Alert == "NICVMANoBuffers" {
				views = append(views, f.View)
			}
		}
		if len(views) != 1 || views[0] != tc.view {
			t.Errorf("no buffers %d, then %d: NICVMANoBuffers in views %v, want [%s]", tc.earlier, tc.later, views, tc.view)
		}
	}
}

// FuzzAnalyzeStatsFiles feeds arbitrary bytes as a libvma and a libxlio
// statistics file of a collect bundle through recognition, the
// libraries' decoders and the vma and xlio collectors.
func FuzzAnalyzeStatsFiles(f *testing.F) {
	f.Add([]byte(vmaStats(func(s *vmastats.Stats) { s.CQs[0].RxPktDrop = 5 })))
	f.Add([]byte(xlioStats(map[string]uint64{"n_buffer_pool_no_bufs": 20}, nil, nil)))
	e := rules(f)
	alerts := alertRules(f)
	manifest := []byte(`{"tool": "nic_exporter collect", "files": [{"name": "vma/vmastat.1", "process": {"pid": 1, "comm": "a"}},` +
		` {"name": "xlio/xliostat.2", "process": {"pid": 2, "comm": "b", "reader_handshake": true}}]}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		NewAnalyzer(e, alerts, nil).Analyze(&Bundle{Source: "fuzz", Files: []File{
			{Name: "manifest.json", Data: manifest}, {Name: "vma/vmastat.1", Data: data}, {Name: "xlio/xliostat.2", Data: data}}})
	})
}
