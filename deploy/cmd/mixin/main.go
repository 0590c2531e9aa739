// Command mixin renders the monitoring mixin of deploy/mixin with its
// default config into deploy/prometheus/alerts.yml and rules.yml. Run it
// from the deploy directory (make mixin does): go run ./cmd/mixin.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
)

func main() {
	dir := flag.String("mixin", "mixin", "directory of mixin.libsonnet")
	out := flag.String("out", "prometheus", "directory to write alerts.yml and rules.yml to")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mixin:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	r, err := mixin.Render(dir, nil)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name   string
		rules  mixin.RuleFile
		header string
	}{
		{"alerts.yml", r.Alerts, mixin.AlertsHeader},
		{"rules.yml", r.Rules, mixin.RulesHeader},
	} {
		b, err := mixin.Marshal(f.rules, f.header)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		path := filepath.Join(out, f.name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
