package diagnose

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
	"github.com/nic-exporter/nic_exporter/internal/ruleeval"
)

// Exit statuses of Run.
const (
	ExitClean      = 0 // no documented condition found
	ExitFindings   = 1 // at least one finding that counts (Report.Counted)
	ExitUnreadable = 2 // an input could not be read
)

// Config configures Run.
type Config struct {
	// Paths are bundle directories or .tar.gz/.tgz archives.
	Paths []string
	// Format is text, json or openmetrics.
	Format string
	// Rules is the kernel log rule table.
	Rules *logrules.Engine
	// AlertRules are the alerting rules findings come from. When nil,
	// Run loads AlertRulesFile and RecordingRulesFile, or the shipped
	// rules (ruleeval.Shipped) when AlertRulesFile is empty.
	AlertRules         *ruleeval.Rules
	AlertRulesFile     string
	RecordingRulesFile string
	// Limits bound what one bundle may hold.
	Limits Limits
	// Now is the timestamp of the openmetrics samples.
	Now time.Time
}

// Run diagnoses every bundle and writes the result to stdout. An input
// that cannot be read is reported on stderr in one line (escaped, as the
// text output is) and makes the status ExitUnreadable; nothing is
// written to stdout then.
func Run(cfg Config, stdout, stderr io.Writer, log *zap.Logger) int {
	if len(cfg.Paths) == 0 {
		fmt.Fprintln(stderr, "nic_exporter diagnose: no bundle given")
		return ExitUnreadable
	}
	alerts := cfg.AlertRules
	if alerts == nil {
		var err error
		if alerts, err = LoadAlertRules(cfg.AlertRulesFile, cfg.RecordingRulesFile, log); err != nil {
			fmt.Fprintf(stderr, "nic_exporter diagnose: %s\n", Escape(err.Error()))
			return ExitUnreadable
		}
	}
	a := NewAnalyzer(cfg.Rules, alerts, log)
	var reports []*Report
	for _, p := range cfg.Paths {
		b, err := Open(p, cfg.Limits)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				ie = &InputError{Path: p, Reason: err.Error()}
			}
			fmt.Fprintf(stderr, "nic_exporter diagnose: %s\n", Escape(ie.Error()))
			return ExitUnreadable
		}
		reports = append(reports, a.Analyze(b))
	}
	var err error
	switch cfg.Format {
	case "json":
		err = WriteJSON(stdout, reports)
	case "openmetrics":
		err = WriteOpenMetrics(stdout, reports, cfg.Rules, cfg.Now, log)
	default:
		err = WriteText(stdout, reports)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter diagnose: writing the result: %s\n", Escape(err.Error()))
		return ExitUnreadable
	}
	for _, r := range reports {
		if r.Counted() > 0 {
			return ExitFindings
		}
	}
	return ExitClean
}

// maxRulesFile bounds a rules file diagnose reads; the shipped
// alerts.yml is about 120 KB.
const maxRulesFile = 16 << 20

// LoadAlertRules loads the alerting rules file alertsFile with the
// recording rules file recordsFile (which may be empty), or the shipped
// rules when alertsFile is empty.
func LoadAlertRules(alertsFile, recordsFile string, log *zap.Logger) (*ruleeval.Rules, error) {
	if alertsFile == "" {
		if recordsFile != "" {
			return nil, errors.New("--recording-rules-file needs --alert-rules-file")
		}
		r, err := ruleeval.Shipped(log)
		if err != nil {
			return nil, fmt.Errorf("the built-in alert rules: %w", err)
		}
		return r, nil
	}
	read := func(flag, name string) ([]byte, error) {
		st, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if !st.Mode().IsRegular() || st.Size() > maxRulesFile {
			return nil, fmt.Errorf("%s: %s is not a regular file of at most %d bytes", flag, name, maxRulesFile)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return b, nil
	}
	var cfg ruleeval.Config
	var err error
	if cfg.Alerts, err = read("--alert-rules-file", alertsFile); err != nil {
		return nil, err
	}
	if recordsFile != "" {
		if cfg.Records, err = read("--recording-rules-file", recordsFile); err != nil {
			return nil, err
		}
	}
	r, err := ruleeval.Load(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("--alert-rules-file: %w", err)
	}
	return r, nil
}
