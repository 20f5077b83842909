# One target per job a person runs; `make help` lists them.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GO_TEST_FLAGS ?= -count=1
FUZZTIME ?= 10s

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (ours and the Jumpstarter core's) and RBAC from markers.
	$(CONTROLLER_GEN) crd paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/jumpstarter/... output:crd:artifacts:config=config/crd/jumpstarter
	$(CONTROLLER_GEN) rbac:roleName=exporterset-controller paths=./exporterset/... output:rbac:artifacts:config=config/rbac
	cp config/crd/bases/*.yaml charts/exporterset/crds/

.PHONY: verify-generated
verify-generated: generate manifests proto ## Fail when generated files (deepcopy, CRDs, RBAC, protobuf) differ from what is committed.
	@git diff --exit-code -- api config charts/exporterset/crds $(PROTO_DIRS) || { echo "generated files are stale: run 'make generate manifests proto' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts/exporterset/crds $(PROTO_DIRS))" || { git status --porcelain -- api config charts/exporterset/crds $(PROTO_DIRS); echo "untracked generated files: run 'make generate manifests proto' and commit" >&2; exit 1; }

# The control-plane binaries each job needs. A failed build ends the recipe (the assignment's
# status is the command's, and .SHELLFLAGS has -e): tests never run with empty assets.
TEST_BINS := etcd kube-apiserver kubectl
BENCH_BINS := $(TEST_BINS) kube-controller-manager
assets = assets=$$(ENVTEST_BINS_ONLY="$(1)" hack/envtest-bins/build.sh)

.PHONY: envtest-bins
envtest-bins: ## Build (once, cached) the control-plane binaries the tests use: etcd, kube-apiserver, kubectl.
	@$(call assets,$(TEST_BINS)); echo "$$assets"

.PHONY: lint
lint: ## gofmt and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed: $$out" >&2; exit 1; }
	go vet ./...
	go vet -tags e2e ./internal/testing/e2e/...

.PHONY: test
test: ## Build the control-plane binaries when missing (and, as root, the lab test's Debian packages), then run unit and integration tests.
	@hack/lab-deps.sh
	@$(call assets,$(TEST_BINS)); echo "KUBEBUILDER_ASSETS=$$assets go test $(GO_TEST_FLAGS) ./..."; \
	KUBEBUILDER_ASSETS="$$assets" go test $(GO_TEST_FLAGS) ./...

.PHONY: e2e
e2e: ## The real-node tier (root): containerd, runc and CNI from Debian, a real kubelet, scheduler and controller-manager, the controller deployed from config/default.
	hack/e2e/run.sh

.PHONY: run
run: ## Run locally: embedded kube-apiserver + etcd, simulated Jumpstarter, the samples and a live view.
	go run ./cmd/exporterset-dev $(ARGS)

.PHONY: build
build: ## Build the controller binary into bin/.
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/exporterset-controller ./cmd/exporterset-controller

# The controller image, built by hack/image (its own Go module) with go-containerregistry: no
# container engine, no base image. IMAGE is the name without tag; the tag is IMAGE_VERSION
# (default: VERSION, the chart's appVersion, so the chart's default image is the one built). bin/image/oci is an OCI layout of one linux/amd64 + linux/arm64
# index; bin/image/exporterset-controller-linux-<arch>.tar are docker archives for `docker load`.
IMAGE ?= ghcr.io/exporterset/exporterset-controller
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' $(CURDIR)/charts/exporterset/Chart.yaml)
IMAGE_VERSION ?= $(VERSION)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_DIR ?= $(LOCALBIN)/image

.PHONY: image
image: ## Build the controller image (linux/amd64 + arm64, no container engine) into bin/image, then verify it.
	go -C hack/image run . build --root $(CURDIR) --out $(IMAGE_DIR) --name $(IMAGE) --platforms $(IMAGE_PLATFORMS) $(if $(IMAGE_VERSION),--version $(IMAGE_VERSION))
	@$(MAKE) --no-print-directory image-verify

.PHONY: image-verify
image-verify: ## Check bin/image by reading it back: user, entrypoint, platforms, labels, no shell, `version` runs.
	go -C hack/image run . verify --layout $(IMAGE_DIR)/oci --platforms $(IMAGE_PLATFORMS) $(if $(IMAGE_VERSION),--version $(IMAGE_VERSION))

.PHONY: image-test
image-test: ## go vet and the tests of the image builder and its checker (hack/image, its own module).
	go -C hack/image vet ./...
	go -C hack/image test $(GO_TEST_FLAGS) ./...

.PHONY: check-prod-deps
check-prod-deps: ## Fail when the production binary links test machinery (envtest, testenv, jumpsim, ...).
	@hack/check-prod-deps.sh

# Helm and promtool, built from the Go module proxy by hack/tools/build.sh (one wrapper module
# each under hack/tools), cached in ~/.cache/exporterset/tools/<tool>-<key>.
CHART := charts/exporterset
MONITORING_TESTS := TestChart|TestKustomize|TestMetricsDocumented|TestMonitoringUsesExportedMetrics|TestPromQLNamesCanFail

.PHONY: tools
tools: ## Build (once, cached) helm and promtool from the Go module proxy (minutes each, cold).
	@hack/tools/build.sh helm
	@hack/tools/build.sh promtool

.PHONY: chart-check
chart-check: tools ## helm lint and template, promtool check/test rules, then the chart and monitoring tests (envtest dry-run, chart = config/default).
	@helm=$$(hack/tools/build.sh helm); promtool=$$(hack/tools/build.sh promtool); set -x; \
	$$helm lint --strict $(CHART); \
	$$helm template exporterset $(CHART) -n exporterset-system --include-crds >/dev/null; \
	$$helm template exporterset $(CHART) -n exporterset-system --set alerts.enabled=true,dashboard.enabled=true,serviceMonitor.enabled=true,watchNamespaces={a} >/dev/null; \
	$$promtool check rules $(CHART)/files/alerts.yaml; \
	$$promtool test rules hack/tools/promtool/alerts_test.yaml
	$(call assets,$(TEST_BINS)); KUBEBUILDER_ASSETS="$$assets" EXPORTERSET_REQUIRE_TOOLS=1 \
		go test $(GO_TEST_FLAGS) -run '$(MONITORING_TESTS)' ./cmd/exporterset-controller/ ./exporterset/

.PHONY: bench
bench: ## Go benchmarks: status math, planner, plugin call overhead.
	go test -run='^$$' -bench=. -benchmem ./exporterset/... ./provisioner/...

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 10s).
	@hack/fuzz.sh $(FUZZTIME)

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	@mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

# Protocol buffers: the provisioner plugin protocol, and the part of Jumpstarter's exporter
# protocol the e2e tier's stand-in exporter speaks. protoc is Debian bookworm's
# protobuf-compiler (apt-get install -y protobuf-compiler); the Go generators are pinned here.
# The generated files name these versions in their header, so the same versions give
# byte-identical output and verify-proto can compare.
PROTOC ?= protoc
PROTOC_VERSION ?= 3.21.12
PROTOC_GEN_GO_VERSION ?= v1.36.11
PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2
PROTOC_GEN_GO ?= $(LOCALBIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
PROTOC_GEN_GO_GRPC ?= $(LOCALBIN)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)
PROTO_FILES := provisioner/plugin/internal/pluginpb/provisioner.proto internal/testing/e2e/standin/jumpstarterpb/jumpstarter.proto
PROTO_DIRS := provisioner/plugin/internal/pluginpb internal/testing/e2e/standin/jumpstarterpb

.PHONY: proto
proto: $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) ## Regenerate the plugin protocol's Go code from its .proto.
	@v=$$($(PROTOC) --version) || { echo "protoc not found: apt-get install -y protobuf-compiler" >&2; exit 1; }; \
	test "$$v" = "libprotoc $(PROTOC_VERSION)" || { echo "protoc is '$$v', want 'libprotoc $(PROTOC_VERSION)' (Debian bookworm's protobuf-compiler): the generated headers would differ" >&2; exit 1; }
	$(PROTOC) --proto_path=. \
		--plugin=protoc-gen-go=$(PROTOC_GEN_GO) --go_out=. --go_opt=paths=source_relative \
		--plugin=protoc-gen-go-grpc=$(PROTOC_GEN_GO_GRPC) --go-grpc_out=. --go-grpc_opt=paths=source_relative \
		$(PROTO_FILES)

.PHONY: verify-proto
verify-proto: proto ## Fail when the generated protocol code differs from what is committed.
	@git diff --exit-code -- $(PROTO_DIRS) || { echo "generated protocol code is stale: run 'make proto' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- $(PROTO_DIRS))" || { git status --porcelain -- $(PROTO_DIRS); echo "untracked generated files: run 'make proto' and commit" >&2; exit 1; }

$(PROTOC_GEN_GO):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@mv $(LOCALBIN)/protoc-gen-go $(PROTOC_GEN_GO)

$(PROTOC_GEN_GO_GRPC):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	@mv $(LOCALBIN)/protoc-gen-go-grpc $(PROTOC_GEN_GO_GRPC)

# Chaos soak (internal/testing/soak): a seeded random walk over a real API server with the simulated
# Jumpstarter, checking the pool's invariants throughout. DURATION is the whole walk, split
# between seed 1 and a random seed; SOAK_SEED=n gives it all to seed n (a replay).
DURATION ?= 2m
SOAK_SEED ?=
SOAK_TIMEOUT ?= 24h

.PHONY: soak
soak: ## Chaos soak for DURATION (default 2m; e.g. DURATION=30m), SOAK_SEED=n to replay a seed.
	$(call assets,$(TEST_BINS)); KUBEBUILDER_ASSETS="$$assets" SOAK_DURATION=$(DURATION) SOAK_SEED=$(SOAK_SEED) \
		go test -count=1 -v -timeout=$(SOAK_TIMEOUT) -run='^TestSoak$$' ./internal/testing/soak/

# The convergence sweep (issue 28): the fixed seeds plus SWEEP_SEEDS random ones (printed),
# each walked SWEEP_WALKS times for WALK_DURATION, one walk after another; a table of every
# walk closes it. SOAK_SEED=n sweeps that seed alone (a replay of a failed walk).
SWEEP_SEEDS ?= 20
SWEEP_WALKS ?= 3
WALK_DURATION ?= 20s

.PHONY: soak-sweep
soak-sweep: ## Convergence sweep: fixed seeds + SWEEP_SEEDS=20 random, SWEEP_WALKS=3 walks of WALK_DURATION=20s each (about 35 min).
	$(call assets,$(TEST_BINS)); KUBEBUILDER_ASSETS="$$assets" SOAK_RANDOM_SEEDS=$(SWEEP_SEEDS) SOAK_WALKS=$(SWEEP_WALKS) SOAK_DURATION=$(WALK_DURATION) SOAK_SEED=$(SOAK_SEED) \
		go test -count=1 -v -timeout=$(SOAK_TIMEOUT) -run='^TestSoak$$' ./internal/testing/soak/

.PHONY: bench-scale
bench-scale: ## Scale benchmark: ours vs the ReplicaSet controller on one envtest API server (minutes; not in `make test`).
	$(call assets,$(BENCH_BINS)); KUBEBUILDER_ASSETS="$$assets" go run ./internal/testing/scalebench/cmd/bench-scale $(BENCH_SCALE_ARGS)
