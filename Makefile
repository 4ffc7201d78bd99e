# minikubelet: a miniature kubelet simulator. Run `make help` for the targets.
GO        ?= go
# Recipes run in bash with pipefail, so a test piped through grep still fails its target.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c
# keep-log ends a test command whose output is long: all of it goes to _output/<target>.log,
# the lines matching the pattern that follows to the terminal; a failure names the log.
keep-log = | (mkdir -p $(CURDIR)/_output && tee $(CURDIR)/_output/$@.log) | grep -E
log-hint = || { echo "$@ failed; its whole output is in _output/$@.log" >&2; exit 1; }
BIN       ?= bin/minikubelet
# The kubelet release minikubelet follows; `make pin-kubernetes` points the tools modules
# (control plane, e2e suite, kubelet table) at it.
K8S_VERSION ?= v1.37.2
# The Kubernetes release `make controlplane`, `conformance-tools`, `kubelet-table` and the
# conformance targets build and run: v1.34, v1.35, v1.36 or v1.37 (docs/versions.md). An
# older one builds the same tools modules with its own go.mod, tools/*/v1.3x.mod, pinned to
# the patch below by `make pin-kubernetes KUBE_VERSION=v1.3x`, into _output/v1.3x/bin; the
# nodes emulate it (--emulated-version).
KUBE_VERSION ?= $(basename $(K8S_VERSION))
KUBE_PATCHES := v1.34.4 v1.35.4 v1.36.3 $(K8S_VERSION)
KUBE_PATCH   := $(firstword $(filter $(KUBE_VERSION).%,$(KUBE_PATCHES)))
# check-kube refuses a KUBE_VERSION that is none of the releases, in the targets that use it.
check-kube = $(if $(KUBE_PATCH),,$(error KUBE_VERSION=$(KUBE_VERSION): want one of $(basename $(KUBE_PATCHES))))
# newest-only refuses another release in the targets that run v1.37's nodes only.
newest-only = $(if $(KUBE_SUFFIX),$(error $@ runs v1.37 only; KUBE_VERSION=$(KUBE_VERSION) is for controlplane, conformance-tools, conformance, kubelet-table and pin-kubernetes))
# What the release's own build stamps (hack/lib/version.sh): without it the programs say
# v0.0.0-master, to `--version` and to clients (/version, kubectl version).
KUBE_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=$(KUBE_PATCH) \
	-X $(p).gitMajor=1 -X $(p).gitMinor=$(subst v1.,,$(KUBE_VERSION)) -X $(p).gitTreeState=clean)
ifeq ($(KUBE_VERSION),$(basename $(K8S_VERSION)))
KUBE_MODFILE :=
KUBE_BIN     := _output/bin
KUBE_SUFFIX  :=
else
KUBE_MODFILE := -modfile=$(KUBE_VERSION).mod
KUBE_BIN     := _output/$(KUBE_VERSION)/bin
KUBE_SUFFIX  := -$(KUBE_VERSION)
endif
CONFIG    ?= configs/minikubelet.yaml
PKGS      ?= ./...
BENCHTIME ?= 1s
FUZZTIME  ?= 60s
# How long a worker may shrink a new interesting input (Go's default, 60s, can take a whole
# 60s run on a multi-kB seed such as configs/minikubelet.yaml).
FUZZMINIMIZETIME ?= 10s
# Every fuzz target as Name:package; make fuzz runs them one at a time (go test -fuzz
# takes one target per run, and the machine's cores are shared).
FUZZ_TARGETS = FuzzManifest:pkg/podsource FuzzConfig:pkg/config FuzzBehavior:pkg/runtime/behavior \
	FuzzFault:pkg/server FuzzHandlers:pkg/server FuzzSet:pkg/featuregate FuzzParse:pkg/simulate \
	FuzzShell:pkg/shell
# The commit `minikubelet version` prints; empty outside a git checkout, where the
# binary falls back to the VCS information go build records.
GIT_COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS   ?= -X github.com/minikubelet/minikubelet/cmd/minikubelet/app.gitCommit=$(GIT_COMMIT)

.DEFAULT_GOAL := help

## help: list the targets
help:
	@awk '/^## /{sub(/^## /,""); i = index($$0, ": "); printf "  %-8s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2)}' $(MAKEFILE_LIST)

## build: build bin/minikubelet
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/minikubelet

## run: run the daemon with the shipped configs/ (Ctrl-C stops it)
run: build
	./$(BIN) --config $(CONFIG) --pod-manifest-path configs/pods

## test: run every test with the race detector
test:
	$(GO) test -race -count=1 $(PKGS)

## soak: the fault soak over SEEDS seeds (default 10) without the race detector; a failing seed prints its replay
soak:
	$(GO) test -count=1 -timeout 30m -run '^TestFaultSoak$$' ./pkg/simulate/ -soak.seeds=$${SEEDS:-10}

## bench: the scale bars in one table with the machine (10k-pod daemon three times: uncatalogued, looping programs, nginx + redis entrypoints; GETs, 1k burst, exit-to-sync, relist, simulate; ~13 min)
bench:
	$(GO) run ./hack/benchtable $(if $(BENCH_OUT),-o $(BENCH_OUT))

## hostile: the resource targets against the real daemon (docs/resources.md): hostile programs beside a quiet pod, then 1,000 busy pods at 100m (~4 min)
hostile:
	$(GO) test -tags scale -count=1 -timeout 20m -run '^(TestHostilePrograms|TestBusyAtTheirLimit)$$' -v ./test/scale/ $(keep-log) '^\s*(\||---|ok|FAIL|hostile_test)' $(log-hint)

## bench-all: every benchmark of pkg/ with allocations
bench-all:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./pkg/...

## scale: compare Generic and Evented PLEG at 100-5000 pods (CPU to start, per steady minute, to remove)
scale:
	$(GO) test -run='^$$' -bench='^Benchmark(StartAll|SteadyState|RemoveAll)$$' -benchmem -benchtime=$(BENCHTIME) ./pkg/kubelet/

## fuzz: run the eight fuzz targets one after the other, each for FUZZTIME (default 60s; docs/reliability.md)
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== $${t%%:*} ($${t#*:}) for $(FUZZTIME)"; \
	  $(GO) test -run='^$$' -fuzz="^$${t%%:*}$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME) ./$${t#*:}/; \
	done

## churn: 10,000 pods added and removed, then nothing of them left (make test runs 1,000 under -race)
churn:
	$(GO) test -count=1 -run '^TestChurnLeavesNothingBehind$$' -v ./pkg/kubelet/ $(keep-log) '^(---|ok|FAIL|\s+churn)' $(log-hint)

## bench-density: NODES x PODS (default 100 x 30) in one process (--node-count) against a real control plane: time to Ready and Running, the cost per node, the API requests, a restart (PROFILE=/abs/dir: the CPU profile, the heap at both ends of the window, the goroutines, and where the memory is: heap, stacks, GC target)
bench-density: controlplane
	$(newest-only)KUBE_BIN_DIR=$(CURDIR)/_output/bin MINIKUBELET_DENSITY_NODES=$${NODES:-100} MINIKUBELET_DENSITY_PODS=$${PODS:-30} MINIKUBELET_DENSITY_STEADY=$${STEADY:-60s} MINIKUBELET_DENSITY_PROFILE=$(PROFILE) \
	  $(GO) test -count=1 -v -timeout 45m -run '^TestDensity$$' ./test/cluster/ $(keep-log) '^\s*(\||---|ok|FAIL|density_test)' $(log-hint)

## bench-peers: minikubelet, KWOK and kubemark side by side (PEERS, default all three), each against a fresh control plane in a network namespace of its own: NODES x PODS (default 1000 x 10; kubemark KUBEMARK_NODES, default 20), time to Ready and Running, steady CPU and RSS per node (STEADY, default 60s, after SETTLE, default 0s), API requests per node, time to delete (docs/scale.md)
bench-peers: controlplane kwok kubemark conformance-bins
	$(newest-only)@cd test/cluster && ../../hack/netns-run env KUBE_BIN_DIR=$(CURDIR)/_output/bin MINIKUBELET_BIN=$(CURDIR)/_output/bin/minikubelet \
	  MINIKUBELET_PEERS=$${PEERS:-minikubelet,kwok,kubemark} MINIKUBELET_PEERS_NODES=$${NODES:-1000} MINIKUBELET_PEERS_PODS=$${PODS:-10} \
	  MINIKUBELET_PEERS_STEADY=$${STEADY:-60s} MINIKUBELET_PEERS_SETTLE=$${SETTLE:-0s} MINIKUBELET_PEERS_KUBEMARK_NODES=$${KUBEMARK_NODES:-20} \
	  ../../_output/bin/cluster.test -test.count=1 -test.v -test.timeout 120m -test.run '^TestPeers$$' $(keep-log) '^\s*(\||---|ok|FAIL|PASS|\S+_test\.go:)' $(log-hint)

## difftest: the shell and applets against Debian's busybox, byte for byte (test/difftest; needs busybox)
difftest:
	@mkdir -p _output
	MINIKUBELET_REQUIRE_TOOLS=1 $(GO) test -count=1 -run '^TestBusybox$$' ./test/difftest/ -args -summary=$(CURDIR)/_output/difftest.txt
	@cat _output/difftest.txt

## e2e: the monitoring end to end: the daemon, a real Prometheus with the shipped rules, an injected hang (Debian prometheus)
e2e:
	MINIKUBELET_E2E=1 MINIKUBELET_REQUIRE_TOOLS=1 $(GO) test -count=1 -v -run 'TestLivePrometheus' ./test/e2e/
	MINIKUBELET_REQUIRE_TOOLS=1 $(GO) test -count=1 ./test/monitoring/

## record-replay: a 10-minute live run recorded with --record (churn, a crash loop, a fault) replays in simulate with the same pod phases (docs/record.md)
record-replay:
	MINIKUBELET_RECORD_FOR=$${RECORD_FOR:-10m} $(GO) test -count=1 -v -timeout 30m -run '^TestRecordReplay$$' ./test/e2e/ $(keep-log) '^(---|ok|FAIL|\s+record_test)' $(log-hint)

## monitoring: run the daemon (make run) and a Prometheus on 127.0.0.1:9090 with configs/prometheus (Ctrl-C stops both)
monitoring: build
	@command -v prometheus >/dev/null || { echo "prometheus not installed (Debian: apt-get install prometheus)"; exit 1; }
	@dir=$$(mktemp -d); \
	  ./$(BIN) --config $(CONFIG) --pod-manifest-path configs/pods & d=$$!; \
	  prometheus --config.file=configs/prometheus/prometheus.yml --storage.tsdb.path="$$dir" --web.listen-address=127.0.0.1:9090 --log.level=warn & p=$$!; \
	  trap 'kill $$d $$p 2>/dev/null; wait; rm -rf "$$dir"' INT TERM EXIT; \
	  echo "Prometheus on http://127.0.0.1:9090/alerts, the daemon on 127.0.0.1:10255"; wait

## simulate: replay every shipped scenario (configs/scenarios) on a virtual clock
simulate: build
	@for f in configs/scenarios/*.yaml; do echo "== $$f"; ./$(BIN) simulate -f $$f | tail -1 || exit 1; done

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: help build run test soak churn bench hostile bench-all bench-density bench-peers scale fuzz simulate lint kubelet-table pin-kubernetes image controlplane kubemark kwok peers metricsserver e2e-cluster e2e monitoring \
	conformance conformance-serial conformance-ci conformance-tools conformance-bins

## kubelet-table: regenerate pkg/kubeletref/kubelet-v1.37.json (KUBE_VERSION=v1.34 for kubelet-v1.34.json), that kubelet's flags and feature gates, by building its own flag set and gate (tools/kubeletref)
kubelet-table:
	$(check-kube)cd tools/kubeletref && $(GO) run $(KUBE_MODFILE) . ../../pkg/kubeletref/kubelet-$(KUBE_VERSION).json

## pin-kubernetes: point the tools modules (control plane, e2e suite, kubelet table) at k8s.io/kubernetes v1.37.2 and its staging modules (hack/pin-kubernetes); KUBE_VERSION=v1.34 pins that release's tools/*/v1.34.mod
pin-kubernetes:
	$(check-kube)GO=$(GO) $(if $(KUBE_MODFILE),MODFILE=$(KUBE_VERSION).mod) hack/pin-kubernetes $(KUBE_PATCH) tools/controlplane tools/conformance tools/kubeletref

## image: minikubelet's OCI image without Docker (a static binary on an empty base, tools/image with go-containerregistry): _output/image/oci and _output/image/minikubelet-oci.tar
IMAGE ?= ghcr.io/minikubelet/minikubelet:$(GIT_COMMIT)
image:
	mkdir -p _output/image
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o _output/image/minikubelet ./cmd/minikubelet
	cd tools/image && $(GO) run . -binary ../../_output/image/minikubelet -tag $(IMAGE) -o ../../_output/image

## controlplane: build kube-apiserver, kube-controller-manager, kube-scheduler and kubectl v1.37.2 into _output/bin (tools/controlplane; KUBE_VERSION=v1.34 builds v1.34.4 into _output/v1.34/bin)
controlplane:
	$(check-kube)@mkdir -p $(KUBE_BIN)
	cd tools/controlplane && $(GO) build $(KUBE_MODFILE) -ldflags "$(KUBE_LDFLAGS)" -o ../../$(KUBE_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl

## kubemark: build kubemark v1.37.2 (the hollow node: a real kubelet on a fake runtime) into _output/bin (tools/controlplane; the newest release only)
kubemark:
	$(newest-only)@mkdir -p _output/bin
	cd tools/controlplane && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o ../../_output/bin/ k8s.io/kubernetes/cmd/kubemark

## kwok: build KWOK v0.8.0's kwok controller into _output/bin, and the stages kwokctl gives it by default into _output/bin/kwok-stages.yaml (tools/kwok, at KWOK's own dependency versions)
kwok:
	@mkdir -p _output/bin
	cd tools/kwok && $(GO) build -o ../../_output/bin/ sigs.k8s.io/kwok/cmd/kwok
	cd tools/kwok && $(GO) run ./stages > ../../_output/bin/kwok-stages.yaml

## peers: build the peers bench-peers compares minikubelet with: kwok and kubemark
peers: kwok kubemark

## metricsserver: build metrics-server v0.7.2 into _output/bin (tools/metricsserver), for kubectl top
metricsserver:
	@mkdir -p _output/bin
	cd tools/metricsserver && $(GO) build -o ../../_output/bin/ sigs.k8s.io/metrics-server/cmd/metrics-server

## e2e-cluster: run the cluster-mode tests against a real control plane on loopback (needs etcd: Debian etcd-server)
e2e-cluster: controlplane metricsserver image
	$(newest-only)KUBE_BIN_DIR=$(CURDIR)/_output/bin MINIKUBELET_IMAGE_TAR=$(CURDIR)/_output/image/minikubelet-oci.tar $(GO) test -race -count=1 -v -run . ./test/cluster/

# The upstream e2e suite (docs/conformance.md): which specs, how many ginkgo processes, how
# many nodes, the suite's time limit, and where the JUnit report and the logs land.
DEFAULT_FOCUS := \[NodeConformance\]
DEFAULT_SKIP  := \[Serial\]|\[Disruptive\]
FOCUS   ?= $(DEFAULT_FOCUS)
SKIP    ?= $(DEFAULT_SKIP)
PROCS   ?= 40
NODES   ?= 1
CONFORMANCE_TIMEOUT ?= 45m
CONFORMANCE_OUT     ?= _output/conformance$(KUBE_SUFFIX)
# The report rewrites docs/conformance.md and the README's figure (the release's own
# section and line) only for the default selection; a narrower FOCUS or SKIP writes
# $(CONFORMANCE_OUT)/report.md instead.
ifeq ($(FOCUS)@$(SKIP),$(DEFAULT_FOCUS)@$(DEFAULT_SKIP))
CONFORMANCE_DOC_ARGS = -doc docs/conformance.md -readme README.md -headline conformance-headline$(KUBE_SUFFIX)
else
CONFORMANCE_DOC_ARGS = -doc $(CONFORMANCE_OUT)/report.md
endif

## conformance-tools: build e2e.test and ginkgo from k8s.io/kubernetes v1.37.2 into _output/bin (tools/conformance; KUBE_VERSION=v1.34 builds v1.34.4 into _output/v1.34/bin)
conformance-tools:
	$(check-kube)@mkdir -p $(KUBE_BIN)
	cd tools/conformance && $(GO) build $(KUBE_MODFILE) -o ../../$(KUBE_BIN)/ginkgo github.com/onsi/ginkgo/v2/ginkgo
	cd tools/conformance && $(GO) test $(KUBE_MODFILE) -ldflags "$(KUBE_LDFLAGS)" -c -o ../../$(KUBE_BIN)/e2e.test k8s.io/kubernetes/test/e2e

## conformance-bins: build bin/minikubelet and the cluster tests' binary for the conformance targets (into _output/bin)
conformance-bins:
	$(GO) build -ldflags "$(LDFLAGS)" -o _output/bin/minikubelet ./cmd/minikubelet
	$(GO) test -c -o _output/bin/cluster.test ./test/cluster/

# run-conformance OUT,FOCUS,SKIP,PROCS,EXTRA_ENV: TestConformance (test/cluster) in a network
# namespace of its own (hack/netns-run): the control plane, NODES minikubelet nodes and the
# suite, all on loopback, stopped at the end. One shell line.
run-conformance = mkdir -p $(1) && ( cd test/cluster && ../../hack/netns-run env MINIKUBELET_CONFORMANCE=1 \
	MINIKUBELET_BIN=$(CURDIR)/_output/bin/minikubelet KUBE_BIN_DIR=$(CURDIR)/$(KUBE_BIN) CONFORMANCE_OUT=$(abspath $(1)) \
	$(if $(KUBE_SUFFIX),CONFORMANCE_EMULATED_VERSION=$(KUBE_VERSION)) \
	CONFORMANCE_FOCUS='$(2)' CONFORMANCE_SKIP='$(3)' CONFORMANCE_PROCS=$(4) CONFORMANCE_NODES=$(NODES) \
	CONFORMANCE_TIMEOUT=$(CONFORMANCE_TIMEOUT) $(5) ../../_output/bin/cluster.test -test.run '^TestConformance$$' -test.v -test.timeout 120m )

## conformance: the upstream [NodeConformance] specs (not [Serial]/[Disruptive]) of v1.37 (KUBE_VERSION=v1.34 and so on for that release's) against its control plane and minikubelet nodes of its release; FOCUS, SKIP, PROCS, NODES override; writes docs/conformance.md
conformance: controlplane conformance-tools conformance-bins
	@status=0; $(call run-conformance,$(CONFORMANCE_OUT),$(FOCUS),$(SKIP),$(PROCS),) || status=$$?; \
	  $(GO) run ./hack/conformancereport -junit $(CONFORMANCE_OUT)/junit_01.xml -focus '$(FOCUS)' -skip '$(SKIP)' -section parallel$(KUBE_SUFFIX) \
	    -release $(KUBE_PATCH) $(CONFORMANCE_DOC_ARGS) -header "Measured $$(date -u +%F) at commit $(GIT_COMMIT) on $$(nproc) cores: PROCS=$(PROCS), $(NODES) nodes."; \
	  exit $$status

# The [Serial] specs of sig-node and sig-storage, one at a time (nothing else runs beside them).
SERIAL_FOCUS := \[sig-node\].*\[Serial\]|\[sig-storage\].*\[Serial\]
SERIAL_SKIP  := \[Disruptive\]|\[Flaky\]|\[Feature:[^]]*\]
## conformance-serial: the [Serial] specs of sig-node and sig-storage, run one at a time; a table of their own in docs/conformance.md
conformance-serial: controlplane conformance-tools conformance-bins
	$(newest-only)@status=0; $(call run-conformance,$(CONFORMANCE_OUT)-serial,$(SERIAL_FOCUS),$(SERIAL_SKIP),1,CONFORMANCE_TIMEOUT=100m) || status=$$?; \
	  $(GO) run ./hack/conformancereport -junit $(CONFORMANCE_OUT)-serial/junit_01.xml -focus '$(SERIAL_FOCUS)' -skip '$(SERIAL_SKIP)' -section serial \
	    -doc docs/conformance.md -header "Measured $$(date -u +%F) at commit $(GIT_COMMIT) on $$(nproc) cores: one process, $(NODES) nodes."; \
	  exit $$status

## conformance-ci: the quick subset of passing specs CI runs (hack/conformancereport/ci-subset.txt); fails if one fails
conformance-ci: controlplane conformance-tools conformance-bins
	$(newest-only)$(call run-conformance,$(CONFORMANCE_OUT)-ci,,,4,CONFORMANCE_FOCUS_FILE=$(CURDIR)/hack/conformancereport/ci-subset.txt CONFORMANCE_EXPECT_PASS=1)
