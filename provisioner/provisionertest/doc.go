// Package provisionertest is the conformance suite of provisioner.Provisioner. Any provisioner
// runs it with one call in its own tests, built in or as a plugin binary:
//
//	func TestConformance(t *testing.T) {
//		provisionertest.Run(t, myprov.New(), provisionertest.Config{
//			Parameters: `{"image": "busybox"}`,
//			Invalid: []provisionertest.Invalid{
//				{Name: "bad memory", Parameters: `{"resources": {"memory": "2 GB"}}`, Fields: []string{"parameters.resources.memory"}},
//			},
//			DryRun: func(ctx context.Context, pod *corev1.Pod) error { return env.DryRunCreate(ctx, pod) },
//		})
//	}
//
//	func TestPluginConformance(t *testing.T) {
//		path := provisionertest.BuildPlugin(t, "", ".", "")
//		provisionertest.Run(t, provisionertest.LoadPlugin(t, path), cfg)
//	}
//
// The suite checks that the provisioner describes itself; accepts the valid parameters and
// rejects each invalid set with field errors at the expected paths; rejects a bad entry of
// every driver type it claims to check (Config.DriverTypes: an entry of that type with a
// config key no driver has, which upstream's exporter refuses at start) and each
// Config.InvalidDrivers list; reports well-formed warnings if it implements
// provisioner.WarningValidator; renders a Pod that keeps
// the exporter contract (the config Secret mounted at provisioner.ExporterConfigDir, the
// exporter image, restartPolicy Never) and that a real API server accepts (server-side
// dry-run through Config.DryRun); is deterministic; neither mutates its request nor hands out
// parts of it (the reconciler changes the Pod it gets); is safe for concurrent use; returns
// promptly from cancelled calls, without calling them invalid input; and cleans up
// idempotently.
//
// Config.DryRun is a function so that the suite needs no API server of its own: tests of this
// module pass internal/testing/testenv's Env.DryRunCreate, third parties an envtest client's dry-run
// create (client.Create(ctx, pod, client.DryRunAll)).
package provisionertest
