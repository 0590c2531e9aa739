package diagnose

import (
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/internal/logrules"
)

// Exit statuses of Run.
const (
	ExitClean      = 0 // no documented condition found
	ExitFindings   = 1 // at least one finding
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
	a := NewAnalyzer(cfg.Rules)
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
		if len(r.Findings) > 0 {
			return ExitFindings
		}
	}
	return ExitClean
}
