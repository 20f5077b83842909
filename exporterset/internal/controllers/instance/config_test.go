package instance

import (
	"flag"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

var updateConfigGolden = flag.Bool("update", false, "rewrite testdata/config/*.yaml from the current output")

const goldenCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

func goldenExporter(ns, name, endpoint string) *jumpstarterv1alpha1.Exporter {
	return &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status:     jumpstarterv1alpha1.ExporterStatus{Endpoint: endpoint},
	}
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// TestRenderExporterConfigGolden pins the bytes of the config Secret: they are compared with
// the Secret every reconcile, so a change in rendering rewrites every instance's Secret. The
// files are exact Secret content (no header); -update rewrites them.
func TestRenderExporterConfigGolden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exporter *jumpstarterv1alpha1.Exporter
		token    string
		ca       []byte
		recycle  vtv1alpha1.RecycleStrategy
		drivers  []vtv1alpha1.DriverSpec
		hooks    string // parameters.hooks as a class holds them
	}{{
		name:     "exit-and-replace",
		exporter: goldenExporter("lab", "pool-7kq2p", "grpc.jumpstarter.example:443"),
		token:    "abc.def",
		ca:       []byte(goldenCA),
		recycle:  vtv1alpha1.RecycleExitAndReplace,
		drivers: []vtv1alpha1.DriverSpec{
			{Name: "qemu", Type: "jumpstarter_driver_qemu.driver.Qemu", Config: rawJSON(`{"smp": 2, "arch": "x86_64", "mem": "2G",
				"hostfwd": {"ssh": {"hostfwd": "tcp::2222-:22"}}, "ratio": 0.5, "big": 12345678901, "on": true, "list": [1, "a", null], "empty": {}}`)},
			{Name: "power", Ref: "qemu.power"},
			{Name: "serial", Type: "jumpstarter_driver_pyserial.driver.PySerial"},
			{Name: "blank", Type: "x.Blank", Config: rawJSON(" \n ")},
			{Name: "null", Type: "x.Null", Config: rawJSON("null")},
			{Name: "Zeta-Upper", Type: "x.Z", Config: rawJSON(`{"s": "yes", "n": "012", "colon": "a: b", "multi": "l1\nl2"}`)},
		},
	}, {
		name:     "in-place-reuse-no-drivers",
		exporter: goldenExporter("team-a", "bench-0001", "[::1]:8082"),
		token:    "0123",
		ca:       nil,
		recycle:  vtv1alpha1.RecycleInPlaceReuse,
	}, {
		name:     "recycle-unset",
		exporter: goldenExporter("ns", "e", ""),
		token:    "",
		ca:       []byte(goldenCA + goldenCA),
		drivers:  []vtv1alpha1.DriverSpec{{Name: "true", Type: "yes"}},
	}, {
		name:     "in-place-reuse-hooks",
		exporter: goldenExporter("lab", "pool-hk9zt", "grpc.jumpstarter.example:443"),
		token:    "abc.def",
		ca:       []byte(goldenCA),
		recycle:  vtv1alpha1.RecycleInPlaceReuse,
		drivers:  []vtv1alpha1.DriverSpec{{Name: "power", Ref: "qemu.power"}},
		hooks: `{"afterLease": {"script": "j power off\nj storage flash clean.img\n", "timeout": 300, "onFailure": "endLease"},
			"beforeLease": {"exec": "/bin/bash", "script": "/opt/check.sh"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var hooks *exportercfg.Hooks
			if tc.hooks != "" {
				var err error
				if hooks, err = exportercfg.ParseHooks([]byte(tc.hooks)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := RenderConfig(tc.exporter, tc.token, tc.ca, tc.recycle, tc.drivers, hooks)
			if err != nil {
				t.Fatal(err)
			}
			provisionertest.Golden(t, filepath.Join("testdata", "config", tc.name+".yaml"), string(got), *updateConfigGolden)
		})
	}
}

func TestRenderExporterConfigDuplicateDriver(t *testing.T) {
	drivers := []vtv1alpha1.DriverSpec{{Name: "qemu", Type: "a.B"}, {Name: "qemu", Ref: "x.y"}}
	_, err := RenderConfig(goldenExporter("ns", "e", "h:1"), "t", nil, vtv1alpha1.RecycleExitAndReplace, drivers, nil)
	if want := `driver "qemu" is listed twice`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
