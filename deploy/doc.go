// Package deploy holds the deployment files of nic_exporter (Prometheus
// alert and recording rules, Kubernetes manifests, the systemd unit) and the
// tests that check them: promtool, a real Prometheus and Alertmanager
// against the demo host, and strict decoding of every manifest into the
// Kubernetes API types. It has no code of its own, so nothing here is
// linked into the exporter.
package deploy
