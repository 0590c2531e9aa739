package main

import (
	"fmt"
	"path/filepath"
	"sort"
)

// pkgShare is where the packages install the alerting half of the
// release: the Prometheus rules, the Alertmanager routes and inhibit
// rules, the Grafana dashboards and their provisioning files. The
// tarball has the same tree at its top.
const pkgShare = "/usr/share/nic_exporter"

// shareFile is one file of the alerting half: Src in the repository,
// Rel under pkgShare (or the tarball's top directory).
type shareFile struct {
	Src, Rel string
}

// shareFiles are the alerting half's files, sorted by Rel: every file is
// shipped as it is in the repository, so that what an operator installs
// is what the deploy tests ran. The dashboards are every
// dashboards/*.json.
func shareFiles(root string) ([]shareFile, error) {
	out := []shareFile{
		{"deploy/prometheus/alerts.yml", "prometheus/alerts.yml"},
		{"deploy/prometheus/rules.yml", "prometheus/rules.yml"},
		{"deploy/alertmanager/alertmanager.yml", "alertmanager/alertmanager.yml"},
		{"deploy/grafana/dashboards.yml", "grafana/provisioning/dashboards/nic_exporter.yml"},
		{"deploy/grafana/datasource.example.yml", "grafana/provisioning/datasources/nic_exporter.example.yml"},
	}
	dashboards, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(dashboards) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", filepath.Join(root, "dashboards"))
	}
	for _, d := range dashboards {
		name := filepath.Base(d)
		out = append(out, shareFile{"dashboards/" + name, "grafana/dashboards/" + name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}
