// Command mixin renders the monitoring mixin of deploy/mixin with its
// default config into deploy/prometheus/alerts.yml and rules.yml, after
// formatting the mixin's .libsonnet files in jsonnetfmt's default style.
// Run it from the deploy directory (make mixin does): go run ./cmd/mixin. With
// -config it renders your own config instead (a JSON object of _config
// fields), for example into another directory:
//
//	go run ./cmd/mixin -config my.json -out /etc/prometheus/nic_exporter
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
)

func main() {
	dir := flag.String("mixin", "mixin", "directory of mixin.libsonnet")
	out := flag.String("out", "prometheus", "directory to write alerts.yml and rules.yml to")
	config := flag.String("config", "", "JSON file of _config fields to override (default: the mixin's defaults)")
	flag.Parse()
	if err := run(*dir, *out, *config); err != nil {
		fmt.Fprintln(os.Stderr, "mixin:", err)
		os.Exit(1)
	}
}

func run(dir, out, configFile string) error {
	var config map[string]any
	if configFile != "" {
		b, err := os.ReadFile(configFile)
		if err != nil {
			return fmt.Errorf("reading the config: %w", err)
		}
		if err := json.Unmarshal(b, &config); err != nil {
			return fmt.Errorf("config %s: %w", configFile, err)
		}
	}
	if configFile == "" {
		// The shipped render: keep the mixin's files in jsonnetfmt's
		// style as well (a deploy test checks it).
		if _, err := mixin.Format(dir, true); err != nil {
			return err
		}
	}
	r, err := mixin.Render(dir, config)
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
		header := f.header
		if configFile != "" {
			header = fmt.Sprintf("# nic_exporter %s, rendered from the nic_exporter monitoring mixin\n# (deploy/mixin) with the config %s by cmd/mixin.\n", f.name, filepath.Base(configFile))
		}
		b, err := mixin.Marshal(f.rules, header)
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
