package host_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// envOldPlugin names a plugin binary built with an earlier version of this module, for
// TestOldPluginBinary. Building one from git history inside the test would be neither fast
// nor hermetic, so the binary is built by hand:
//
//	old=/tmp/sdk-old-$RANDOM
//	git worktree add "$old" <commit>
//	(cd "$old" && go build -o "$old.bin/exporterset-provisioner-container" ./examples/container-provisioner)
//	git worktree remove "$old"
//	KUBEBUILDER_ASSETS=$(hack/envtest-bins/build.sh --check) EXPORTERSET_OLD_PLUGIN="$old.bin/exporterset-provisioner-container" \
//		go test -count=1 -run TestOldPluginBinary -v ./provisioner/plugin/host/
const envOldPlugin = "EXPORTERSET_OLD_PLUGIN"

// TestOldPluginBinary runs the conformance kit through this host against a plugin binary built
// with an older SDK: the protocol must not change under plugins already shipped.
func TestOldPluginBinary(t *testing.T) {
	old := os.Getenv(envOldPlugin)
	if old == "" {
		t.Skipf("%s is not set: no old plugin binary to check (see envOldPlugin for how to build one)", envOldPlugin)
	}
	dir := pluginDir(t)
	p := load(t, install(t, dir, old, "container"), fastOptions(t))
	t.Logf("old plugin: protocol %d, SDK %q", p.Info().ProtocolVersion, p.Info().SDKVersion)
	provisionertest.Run(t, p, exampleKitConfig())
}

// protocolV1Commit is the last commit of this repository whose plugin SDK served protocol
// version 1 only (the one before the ExternalProvisioner service was added).
const protocolV1Commit = "08012b8c464b27c8c9cfb9a17ce5390989398cd6"

// TestPluginBuiltForProtocolV1 builds the example plugin from the source of protocolV1Commit,
// taken out of this repository's own history, and checks that this host still loads it,
// negotiates version 1, does not take it for an ExternalProvisioner, and passes the
// conformance kit through it. It is skipped only where the history is not at hand (a source
// archive, a shallow clone).
func TestPluginBuiltForProtocolV1(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	repo := strings.TrimSpace(string(root))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", protocolV1Commit+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this checkout's history (shallow clone?)", protocolV1Commit)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, protocolV1Commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v\n%s", protocolV1Commit, err, out)
	}
	bin := filepath.Join(t.TempDir(), "exporterset-provisioner-container")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/container-provisioner")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the protocol-1 plugin: %v\n%s", err, out)
	}
	p := load(t, install(t, pluginDir(t), bin, "container"), fastOptions(t))
	if info := p.Info(); info.ProtocolVersion != 1 || info.External {
		t.Fatalf("protocol-1 plugin: info %+v, want protocol 1, not external", info)
	}
	if _, ok := p.Provisioner().(provisioner.ExternalProvisioner); ok {
		t.Fatal("the host offers a protocol-1 plugin as an ExternalProvisioner")
	}
	// Built before the Warnings RPC: it answers Unimplemented, which is no warnings.
	req, err := exampleKitConfig().NewRequest(p.Info().Description)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := p.Warnings(t.Context(), req); err != nil || w != nil {
		t.Fatalf("Warnings of the protocol-1 plugin: %v, %v; want none and no error", w, err)
	}
	provisionertest.Run(t, p.Provisioner(), exampleKitConfig())
}
