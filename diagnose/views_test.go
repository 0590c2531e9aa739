package diagnose

import (
	"sort"
	"strings"
	"testing"
)

// dayOldSamples is a collect bundle's manifest with the earlier sample
// ten seconds before the later one, a day after boot.
const dayOldSamples = `{"tool": "nic_exporter collect", "samples": [` +
	`{"dir": "earlier_sample", "time": "2026-01-02T03:04:05Z", "uptime_seconds": 86400},` +
	`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 86410}]}`

// dayOldSample is the manifest of a bundle of one sample a day after
// boot.
const dayOldSample = `{"tool": "nic_exporter collect", "samples": [` +
	`{"dir": "", "time": "2026-01-02T03:04:15Z", "uptime_seconds": 86410}]}`

// TestViews checks the views findings come from: a bundle of one sample
// is evaluated since boot, one of two samples at the rate between them,
// plus what only the average since boot before the earlier sample gives
// (a count that rose before the earlier sample and not between), which
// is reported and does not count for the exit status.
func TestViews(t *testing.T) {
	ena := func(wd string) string { return ethtoolS("ena", "wd_expired: "+wd) }
	efa := func(pkts, drops string) string { return counters("rx_pkts:"+pkts, "rx_drops:"+drops) }
	tests := []struct {
		name           string
		file           string
		earlier, later string // earlier "" is a bundle of one sample
		// want is "alert view" per finding, sorted; counted how many
		// count for the exit status.
		want    []string
		counted int
		// detail is a part of the detail of the first finding.
		detail string
	}{
		{name: "a watchdog reset between the samples", file: "ethtool_-S_eth0.txt", earlier: ena("1"), later: ena("2"),
			want: []string{"NICENAWatchdogExpired between_samples"}, counted: 1, detail: "at their rate between them, 10s apart"},
		{name: "a watchdog reset before the earlier sample only", file: "ethtool_-S_eth0.txt", earlier: ena("1"), later: ena("1"),
			want: []string{"NICENAWatchdogExpired since_boot_only"}, counted: 0, detail: "did not move between the two samples, 10s apart"},
		{name: "no watchdog reset", file: "ethtool_-S_eth0.txt", earlier: ena("0"), later: ena("0")},
		{name: "a watchdog reset, one sample", file: "ethtool_-S_eth0.txt", later: ena("1"),
			want: []string{"NICENAWatchdogExpired since_boot"}, counted: 1, detail: "counters averaged since boot: uptime 1d0h"},
		// Drops of 500 per million packets on average since boot
		// (1,000 packets a second), and 100 per million between the
		// samples, which is not above the alert's 100: both counters
		// moved, only the average since boot gives the finding.
		{name: "EFA drops moved, high only since boot", file: "hw_counters_rdmap0s6_1.txt",
			earlier: efa("200000000", "100000"), later: efa("200010000", "100001"),
			want: []string{"NICEFARxDrops since_boot_only"}, counted: 0, detail: "the rule's expression returns nothing for this device"},
		// 500 drops per million packets between the samples (a
		// million packets a second).
		{name: "EFA drops high between the samples", file: "hw_counters_rdmap0s6_1.txt",
			earlier: efa("200000000", "100000"), later: efa("210000000", "105000"),
			want: []string{"NICEFARxDrops between_samples"}, counted: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := []File{{Name: tt.file, Data: []byte(tt.later)}, {Name: "manifest.json", Data: []byte(dayOldSample)}}
			if tt.earlier != "" {
				files = []File{{Name: tt.file, Data: []byte(tt.later)}, {Name: "earlier_sample/" + tt.file, Data: []byte(tt.earlier)},
					{Name: "manifest.json", Data: []byte(dayOldSamples)}}
			}
			r := analyzer(t).Analyze(&Bundle{Source: "b", Files: files})
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Alert+" "+f.View)
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || r.Counted() != tt.counted {
				t.Fatalf("findings %q, %d counted; want %q, %d counted (%+v)", got, r.Counted(), tt.want, tt.counted, r.Findings)
			}
			if tt.detail != "" && !strings.Contains(r.Findings[0].Detail, tt.detail) {
				t.Errorf("detail %q does not say %q", r.Findings[0].Detail, tt.detail)
			}
		})
	}
}

// TestSinceBootOnlyLast checks that findings only since boot are listed
// after the others, whatever their severity.
func TestSinceBootOnlyLast(t *testing.T) {
	fs := []Finding{
		{Alert: "B", Severity: SeverityPage, View: ViewSinceBootOnly},
		{Alert: "C", Severity: SeverityWarning, View: ViewBetweenSamples},
		{Alert: "A", Severity: SeverityWarning, View: ViewSinceBootOnly},
		{Alert: "D", Severity: SeverityPage, View: ViewBetweenSamples},
	}
	sortFindings(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Alert)
	}
	if strings.Join(got, "") != "DCBA" {
		t.Errorf("order %v, want D C B A", got)
	}
}
