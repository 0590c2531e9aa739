// Command mixin renders the monitoring mixin of deploy/mixin with its
// default config into deploy/prometheus/alerts.yml and rules.yml, after
// formatting the mixin's .libsonnet files in jsonnetfmt's default style.
// Run it from the deploy directory (make mixin does): go run ./cmd/mixin. With
// -config it renders your own config instead (a JSON object of _config
// fields), for example into another directory:
//
//	go run ./cmd/mixin -config my.json -out /etc/prometheus/nic_exporter
//
// With -import it adds alert groups written as YAML to the mixin instead:
// each group of the rule file (or those -groups names) becomes
// mixin/alerts/<name>.libsonnet, with the mixin's selector in every vector
// selector, and the command prints the import lines for mixin.libsonnet.
//
//	go run ./cmd/mixin -import other-alerts.yml -groups nic-pcie-aer
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nic-exporter/nic_exporter/deploy/internal/mixin"
)

func main() {
	dir := flag.String("mixin", "mixin", "directory of mixin.libsonnet")
	out := flag.String("out", "prometheus", "directory to write alerts.yml and rules.yml to")
	config := flag.String("config", "", "JSON file of _config fields to override (default: the mixin's defaults)")
	importFile := flag.String("import", "", "Prometheus rule file whose alert groups to add to the mixin as alerts/<group>.libsonnet")
	groups := flag.String("groups", "", "comma-separated groups of -import to add (default: all)")
	flag.Parse()
	if *importFile != "" {
		if err := importGroups(*dir, *importFile, *groups); err != nil {
			fmt.Fprintln(os.Stderr, "mixin:", err)
			os.Exit(1)
		}
		return
	}
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

// importGroups writes the alert groups of a rule file into the mixin in
// dir and prints the import lines mixin.libsonnet needs.
func importGroups(dir, file, groups string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var names []string
	if groups != "" {
		names = strings.Split(groups, ",")
	}
	srcs, err := mixin.ImportGroups(b, names)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var lines []string
	for name, src := range srcs {
		rel := "alerts/" + strings.TrimPrefix(name, "nic-") + ".libsonnet"
		path := filepath.Join(dir, rel)
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s exists already", path)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("  (import '%s') +", rel))
	}
	if _, err := mixin.Format(dir, true); err != nil {
		return err
	}
	sort.Strings(lines)
	fmt.Printf("Add to the alert groups of %s, where they belong, then run make mixin:\n%s\n", filepath.Join(dir, "mixin.libsonnet"), strings.Join(lines, "\n"))
	return nil
}
