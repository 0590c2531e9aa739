// Package nodehealth computes the node verdict of nic_exporter: a small
// set of node conditions (NICFirmwareFatal, NICLinkDown, ...) that say
// whether the node's NICs are fit to take work. Each condition mirrors an
// alert of deploy/prometheus/alerts.yml (the table in Conditions, which
// the deploy tests compare with the rules), and is computed in the daemon
// from the snapshots its collectors publish: it reads no device.
//
// A condition is set as soon as its evidence has held for the alert's
// "for:", and cleared only after the node has shown no evidence for
// Config.ClearAfter, so that a flapping fault does not flap the verdict
// and whatever acts on it (a Slurm drain, a Kubernetes taint).
//
// The verdict is served as JSON at /health (Handler), as the metric
// nic_exporter_node_condition (Collector), and handed to Sinks on every
// transition. The check subcommand of nic_exporter reads /health
// (Fetch) for Slurm, LBNL NHC and node-problem-detector.
package nodehealth
