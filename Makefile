GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
STATICCHECK_VERSION ?= v0.8.2
LDFLAGS   := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=$(BRANCH)

.PHONY: all build test unit race lint fmt-check vet staticcheck tidy-check bench bench-compare demo

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o nic_exporter ./cmd/nic_exporter

demo:
	$(GO) run ./cmd/nic_exporter --demo

# test runs every test: the linters, then all Go tests (unit, fixture,
# fuzz seed corpora, real-kernel and end-to-end tests).
test: lint unit race

unit:
	$(GO) test -count=1 ./...

# race runs the concurrent core (runner, cache, scrape handler) and the
# collectors under the race detector. The Soft-RoCE kernel test is left
# out: it boots a guest with a test binary built without -race, and unit
# runs it already.
race:
	$(GO) test -race -count=1 -skip '^TestSoftRoCE$$' ./collector/...

lint: fmt-check vet staticcheck tidy-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

tidy-check:
	@cp go.mod /tmp/go.mod.tidy-check && cp go.sum /tmp/go.sum.tidy-check; \
	$(GO) mod tidy; \
	if ! diff -q go.mod /tmp/go.mod.tidy-check >/dev/null || ! diff -q go.sum /tmp/go.sum.tidy-check >/dev/null; then \
		diff -u /tmp/go.mod.tidy-check go.mod; mv /tmp/go.mod.tidy-check go.mod; mv /tmp/go.sum.tidy-check go.sum; \
		echo "go mod tidy changes go.mod/go.sum"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# bench-compare runs nic_exporter and node_exporter 1.5.0 side by side on
# the same synthetic large host and real veth devices and writes
# docs/bench-compare.md, docs/bench-compare.jsonl and docs/bench-compare.png.
# It needs root and takes a few minutes; it is not part of make test.
bench-compare:
	bench/compare.sh
