// Command nic_exporter is a Prometheus exporter for the health of
// high-performance NICs: mlx5 ConnectX and InfiniBand adapters, AWS ENA and
// applications accelerated by NVIDIA VMA.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/prometheus/common/version"
	"go.uber.org/zap"

	"github.com/nic-exporter/nic_exporter/collect"
	"github.com/nic-exporter/nic_exporter/daemon"
	"github.com/nic-exporter/nic_exporter/internal/logging"
)

func main() {
	// Go's default GC target (100) lets the heap grow to twice the live
	// data before collecting. The live data here is the snapshots and the
	// collectors' state, and the garbage per poll and scrape is small, so
	// a target of 50 keeps the resident memory near what operators budget
	// for (under 64 MiB at 100,000 series) for little CPU. GOGC in the
	// environment still decides when set.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	stampVersion()
	// The subcommand has its own flags: none of the daemon's applies to
	// it, and its --help is a manual page of its own.
	if len(os.Args) > 1 && os.Args[1] == "diagnose" {
		os.Exit(runDiagnose(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "collect" {
		os.Exit(collect.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(runCheck(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	o, err := daemon.ParseFlags(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter: %v\n", err)
		return 2
	}
	log, err := logging.New(o.LogConfig(), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nic_exporter: %v\n", err)
		return 2
	}
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP would end the process (status 129, which Restart=on-failure
	// does not restart). There is nothing to reload: the flags are read
	// once, and the rules files are loaded into the kmsg and applog
	// collectors when they are built. Say so instead.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Warn("SIGHUP ignored: nic_exporter reloads nothing; restart it to apply changed flags or rules files")
			}
		}
	}()
	log.Info("starting nic_exporter", zap.String("version", version.Info()), zap.String("build", version.BuildContext()))
	if err := daemon.Run(ctx, o, log); err != nil {
		log.Error("nic_exporter stopped", zap.Error(err))
		return 1
	}
	log.Info("nic_exporter stopped")
	return 0
}
