package host_test

import (
	"os"
	"testing"

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
