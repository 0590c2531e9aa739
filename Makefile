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

.PHONY: all build test unit soak race cross-build lint fmt-check vet staticcheck tidy-check bench bench-compare bench-fleet bench-demo bench-idle demo demo-stack mixin

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o nic_exporter ./cmd/nic_exporter

demo:
	$(GO) run ./cmd/nic_exporter --demo

# demo-stack runs the whole alerting pipeline on 127.0.0.1 until Ctrl-C:
# the built exporter's demo host with a fault schedule (fw_fatal 15 s after
# the start, so a page shows within a minute), a real Prometheus with the
# shipped rules, a real Alertmanager with the shipped routing and inhibit
# rules, and a webhook receiver that prints each notification
# (deploy/cmd/demostack). Flags go in DEMO_STACK_FLAGS, for example
# DEMO_STACK_FLAGS='--port.prometheus=19090 --faults=wd_expired@10s';
# cd deploy && go run ./cmd/demostack -h lists them.
demo-stack: build
	cd deploy && $(GO) run ./cmd/demostack --exporter=$(CURDIR)/nic_exporter $(DEMO_STACK_FLAGS)

# mixin renders the monitoring mixin (deploy/mixin) with its default config
# into deploy/prometheus/alerts.yml and rules.yml, which are generated, and
# refreshes their copies: the Helm chart's files/, the kustomize
# PrometheusRule and internal/ruleeval's (embedded in the binary for
# diagnose). Deploy tests (and TestShippedRulesMatchDeploy) fail when any
# of them differs from a fresh render.
mixin:
	cd deploy && $(GO) run ./cmd/mixin
	$(MAKE) helm-rules
	cp deploy/prometheus/alerts.yml deploy/prometheus/rules.yml internal/ruleeval/
	cd deploy && $(GO) test -count=1 -run '^TestPrometheusRuleMatchesRuleFiles$$' . -update

# Per test binary timeouts, for a 2-core machine that is busy with other
# work: about three times the longest package's time measured under load
# (docs/benchmarks.md, "The test suite under load"). A package that runs
# past its timeout panics with the list of running tests, which
# internal/testsummary prints under --- UNFINISHED.
UNIT_TIMEOUT    ?= 20m
DEPLOY_TIMEOUT  ?= 30m
RACE_TIMEOUT    ?= 20m
RELEASE_TIMEOUT ?= 20m

# test runs every test: the linters, the cross builds, the race tests,
# the release artifacts' checks, the API server of the Kubernetes tests
# (built once, see kube-apiserver), then all Go tests (unit, fixture, fuzz
# seed corpora, real-kernel and end-to-end tests), last so that their
# summary of skips ends the output.
test: lint cross-build race release-check kube-apiserver unit

# unit runs the Go tests of both modules: the exporter's, and the deploy
# tests (deploy/go.mod: promtool, the real Prometheus and Alertmanager
# stack, the Kubernetes manifests, the systemd unit). internal/testsummary
# prints what go test prints, then every skipped test with its reason and
# the counts; it fails when a test or build does.
unit:
	{ NIC_EXPORTER_KUBE_APISERVER=$(KUBE_APISERVER) $(GO) test -json -count=1 -timeout $(UNIT_TIMEOUT) ./...; cd deploy && $(GO) test -json -count=1 -timeout $(DEPLOY_TIMEOUT) ./...; } | $(GO) run ./internal/testsummary

# soak runs alone the demo soak test that unit runs too: the built
# binary's demo with every fault for about a minute, failing if a counter
# ever decreases between scrapes.
soak:
	$(GO) test -count=1 -timeout $(UNIT_TIMEOUT) -run '^TestDemoSoak$$' -v ./cmd/nic_exporter

# race runs the concurrent core (runner, cache, scrape handler) and the
# collectors under the race detector. The kernel tests (Soft-RoCE, kmsg, AER)
# are left out: they boot a guest with a test binary built without -race,
# and unit runs them already.
race:
	$(GO) test -race -count=1 -timeout $(RACE_TIMEOUT) -skip '^(TestSoftRoCE|TestKmsgKernel|TestNetdevAERKernel)$$' ./collector/...

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
# go.mod or go.sum of the exporter, the deploy tests or the tools (the
# linters' module and Helm's); it
# writes nothing.
tidy-check:
	$(GO) mod tidy -diff
	cd deploy && $(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	cd tools/helm && $(GO) mod tidy -diff

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

# bench-demo measures the demo host as a process (RSS, CPU, series) for
# docs/benchmarks.md and deploy/README.md; it needs no root and is not part
# of make test.
bench-demo:
	bench/demo.sh

# bench-idle measures the idle cost (background polls, no scrape) of the
# revisions in REVS on the large host of bench-compare, in one sitting:
# make bench-idle REVS="v0.1.0 HEAD". It needs root and is not part of
# make test.
REVS ?= HEAD
bench-idle:
	bench/idle.sh $(REVS)

# ---- Releases (tools/release: its own module, see its go.mod) ----------
# release writes the release artifacts into dist/: reproducible
# linux/amd64 and linux/arm64 tarballs, .deb and .rpm packages (both with
# the rules, Alertmanager config and dashboards in
# /usr/share/nic_exporter), the multi-arch OCI image as an OCI layout
# tarball, a CycloneDX SBOM per binary, and sha256sums.txt. The version
# is the git tag without its v (0.0.0-dev.<commit time>.<commit> before
# the first) unless VERSION is given on the command line;
# SOURCE_DATE_EPOCH, the commit time by default, dates every file.
# RELEASING.md is the release checklist.
RELEASE_GO := $(GO) -C $(CURDIR)/tools/release
# -version only when VERSION was given: the default above is git
# describe's, with the tag's v.
RELEASE_VERSION := $(if $(filter command line environment,$(origin VERSION)),-version $(VERSION))

.PHONY: release release-check release-vet release-staticcheck release-tidy-check publish

release:
	$(RELEASE_GO) run . -root $(CURDIR) -out $(CURDIR)/dist $(RELEASE_VERSION)

# publish pushes the release in $(DIST) (make release's dist/) to
# REGISTRY: the multi-arch image as REGISTRY/nic_exporter:VERSION with
# skopeo, digests preserved, and the Helm chart, packaged at VERSION with
# REGISTRY's image as its default, as oci://REGISTRY/charts/nic-exporter
# with the pinned Helm. It checks sha256sums.txt first and prints both
# references with their digests. Log in first (skopeo login, helm
# registry login). PUBLISH_FLAGS=-plain-http talks HTTP to a registry on
# loopback, as the test does.
#   make publish REGISTRY=ghcr.io/nic-exporter VERSION=0.1.0
DIST ?= $(CURDIR)/dist
PUBLISH_FLAGS ?=
publish:
	@test -n "$(REGISTRY)" || { echo "make publish: set REGISTRY, such as REGISTRY=ghcr.io/nic-exporter" >&2; exit 2; }
	$(RELEASE_GO) run . publish -root $(CURDIR) -dist $(DIST) -registry $(REGISTRY) $(RELEASE_VERSION) $(PUBLISH_FLAGS)

# release-check builds the release (twice, to compare checksums) into
# temporary directories and checks every artifact: tarball members,
# dpkg-deb and a real dpkg install into an empty root with
# systemd-analyze verify, the .rpm read back, the alerting half byte for
# byte in all three, the OCI image's config, layer and binary, the SBOMs
# against go version -m, and make publish into a real registry
# (docker-registry) on loopback, pulled back by digest. make test runs it
# before unit.
release-check:
	$(RELEASE_GO) test -count=1 -timeout $(RELEASE_TIMEOUT) ./...

release-vet:
	$(RELEASE_GO) vet ./...

release-staticcheck:
	cd tools/release && $(STATICCHECK) ./...

release-tidy-check:
	$(RELEASE_GO) mod tidy -diff

vet: release-vet
staticcheck: release-staticcheck
tidy-check: release-tidy-check

# Helm, pinned in a module of its own (tools/helm/go.mod), for the chart in
# deploy/helm/nic-exporter. The chart's tests (helm lint --strict, helm
# template of several value sets, strict decoding) are deploy tests, run by
# unit. helm-rules copies the rule files into the chart (Helm cannot read
# files outside it); TestHelmRulesCopy fails when the copy is stale.
HELM := $(GO) tool -modfile=$(CURDIR)/tools/helm/go.mod helm
HELM_CHART := deploy/helm/nic-exporter

.PHONY: helm-rules helm-lint
helm-rules:
	cp deploy/prometheus/alerts.yml deploy/prometheus/rules.yml $(HELM_CHART)/files/

helm-lint:
	$(HELM) lint --strict $(HELM_CHART)

# kube-apiserver builds the API server that the Kubernetes tests start
# with etcd (internal/kubetest: nodehealth/kube, cmd/nic_exporter's
# TestKubernetesNodeCondition) from k8s.io/kubernetes through the module
# proxy, in tools/kube (a module of its own: it pins the k8s.io staging
# modules to the API server's version), once: the binary is cached in
# KUBE_CACHE under the Kubernetes and Go versions and the target does
# nothing while it is there. A cold build takes 11 to 28 minutes on a busy
# 2-core machine (2.1 GB peak memory, a 146 MB binary); a change of
# either version builds a new one. make test runs it before unit, which
# hands the path to the tests in NIC_EXPORTER_KUBE_APISERVER.
KUBE_VERSION   := $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' tools/kube/go.mod)
KUBE_CACHE     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nic_exporter-kube
KUBE_APISERVER  = $(KUBE_CACHE)/$(KUBE_VERSION)-$(shell $(GO) env GOVERSION)/kube-apiserver

.PHONY: kube-apiserver
kube-apiserver:
	@if [ -x "$(KUBE_APISERVER)" ]; then echo "kube-apiserver: cached at $(KUBE_APISERVER)"; else \
	  echo "kube-apiserver: building $(KUBE_VERSION) into $(KUBE_APISERVER) (11-28 minutes cold)"; \
	  mkdir -p "$(dir $(KUBE_APISERVER))" && \
	  cd tools/kube && $(GO) build -o "$(KUBE_APISERVER).tmp" k8s.io/kubernetes/cmd/kube-apiserver && \
	  mv "$(KUBE_APISERVER).tmp" "$(KUBE_APISERVER)"; fi
