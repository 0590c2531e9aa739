// Package promstack runs a local alerting stack out of real programs: a
// Prometheus, an Alertmanager and the exporter, each a child process with
// its output in a log file, and a webhook receiver in this process that
// records Alertmanager's notifications. The deploy tests and the demo
// stack (deploy/cmd/demostack) both build on it. Everything listens on
// 127.0.0.1.
package promstack
