GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=$(BRANCH)

# staticcheck is pinned as a Go tool dependency of its own module
# (tools/go.mod), so lint runs offline once the modules are cached and its
# dependencies stay out of the exporter's module graph.
STATICCHECK := $(GO) tool -modfile=$(CURDIR)/tools/go.mod staticcheck

.PHONY: all build test unit soak race cross-build lint fmt-check vet staticcheck tidy-check bench bench-compare bench-fleet demo

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o nic_exporter ./cmd/nic_exporter

demo:
	$(GO) run ./cmd/nic_exporter --demo

# test runs every test: the linters, then all Go tests (unit, fixture,
# fuzz seed corpora, real-kernel and end-to-end tests), then the cross
# builds.
test: lint unit race cross-build

# unit runs the Go tests of both modules: the exporter's, and the deploy
# tests (deploy/go.mod: promtool, the real Prometheus and Alertmanager
# stack, the Kubernetes manifests, the systemd unit).
unit:
	$(GO) test -count=1 ./...
	cd deploy && $(GO) test -count=1 ./...

# soak runs alone the demo soak test that unit runs too: the built
# binary's demo with every fault for about a minute, failing if a counter
# ever decreases between scrapes.
soak:
	$(GO) test -count=1 -run '^TestDemoSoak$$' -v ./cmd/nic_exporter

# race runs the concurrent core (runner, cache, scrape handler) and the
# collectors under the race detector. The kernel tests (Soft-RoCE, kmsg, AER)
# are left out: they boot a guest with a test binary built without -race,
# and unit runs them already.
race:
	$(GO) test -race -count=1 -skip '^(TestSoftRoCE|TestKmsgKernel|TestNetdevAERKernel)$$' ./collector/...

# cross-build builds every package for the Linux servers the exporter runs
# on and for darwin/arm64, where developers build and run the unit tests on
# laptops; go vet for darwin also type-checks the tests there. The builds
# are static like the release binary's, and write nothing.
cross-build:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build ./...
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build ./...
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build ./...
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet ./...

lint: fmt-check vet staticcheck tidy-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...
	cd deploy && $(STATICCHECK) ./...

# tidy-check fails, printing the diff, when go mod tidy would change a
# go.mod or go.sum of the exporter, the deploy tests or the tools; it
# writes nothing.
tidy-check:
	$(GO) mod tidy -diff
	cd deploy && $(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# bench-compare runs nic_exporter and node_exporter 1.5.0 side by side on
# the same synthetic large host and real veth devices and writes
# docs/bench-compare.md, docs/bench-compare.jsonl and docs/bench-compare.png.
# It needs root and takes a few minutes; it is not part of make test.
bench-compare:
	bench/compare.sh

# bench-fleet measures the cost on the Prometheus side: series per host of
# node_exporter and of nic_exporter's default and detail profiles on the
# large and a typical ENA host, then a real Prometheus server, agent and
# remote-write receiver on the large host for DURATION seconds (default
# 11 minutes). It writes docs/fleet-cost.md and docs/fleet-cost.png; it
# needs root and is not part of make test.
bench-fleet:
	bench/fleet.sh
