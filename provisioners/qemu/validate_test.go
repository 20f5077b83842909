package qemu

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// fieldErrors returns the messages of a provisioner error's field errors.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if !provisioner.IsInvalid(err) {
		t.Fatalf("not an invalid-input error: %v", err)
	}
	var msgs []string
	for _, fe := range err.(*provisioner.Error).Fields {
		msgs = append(msgs, fe.Error())
	}
	return msgs
}

// TestValidateRejectsBadParameters pins the exact message of each mistake: the reconciler
// shows them to people in a condition.
func TestValidateRejectsBadParameters(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         []string
	}{
		{"not an object", `["arch"]`, []string{
			`parameters: Invalid value: "array": must be a JSON object`}},
		{"not JSON", `{"arch":`, []string{
			`parameters: Invalid value: "{\"arch\":": is not valid JSON: unexpected EOF`}},
		{"misspelt top-level key", `{"resourses":{"cpu":2}}`, []string{
			`parameters.resourses: Unsupported value: "resourses": unknown parameter (did you mean "resources"?)`}},
		{"transposed letters", `{"arhc":"x86_64"}`, []string{
			`parameters.arhc: Unsupported value: "arhc": unknown parameter (did you mean "arch"?)`}},
		{"wrong case", `{"machinetype":"q35"}`, []string{
			`parameters.machinetype: Unsupported value: "machinetype": unknown parameter (did you mean "machineType"?)`}},
		{"key at the wrong level", `{"memory":"2Gi"}`, []string{
			`parameters.memory: Unsupported value: "memory": unknown parameter (did you mean "resources.memory"?)`}},
		{"upstream's storage.size", `{"storage":{"size":"20Gi"}}`, []string{
			`parameters.storage.size: Unsupported value: "size": unknown parameter (did you mean "resources.storage"?)`}},
		{"nothing close", `{"kernel":"/boot/vmlinuz"}`, []string{
			`parameters.kernel: Unsupported value: "kernel": unknown parameter; supported: "arch", "firmware", "machineType", "resources", "storage"`}},
		{"misspelt nested key", `{"resources":{"memroy":"2Gi"}}`, []string{
			`parameters.resources.memroy: Unsupported value: "memroy": unknown parameter (did you mean "resources.memory"?)`}},
		{"arch not a string", `{"arch":64}`, []string{
			`parameters.arch: Invalid value: 64: must be a string`}},
		{"Kubernetes arch name", `{"arch":"amd64"}`, []string{
			`parameters.arch: Unsupported value: "amd64": supported values: "aarch64", "x86_64" (did you mean "x86_64"?)`}},
		{"unknown arch", `{"arch":"riscv64"}`, []string{
			`parameters.arch: Unsupported value: "riscv64": supported values: "aarch64", "x86_64"`}},
		{"machine the driver does not emulate", `{"machineType":"pc"}`, []string{
			`parameters.machineType: Unsupported value: "pc": supported values: "q35" (for arch "x86_64")`}},
		{"machine of the other arch", `{"arch":"aarch64","machineType":"q35"}`, []string{
			`parameters.machineType: Unsupported value: "q35": supported values: "virt" (for arch "aarch64")`}},
		{"BIOS on aarch64", `{"arch":"aarch64","firmware":"bios"}`, []string{
			`parameters.firmware: Unsupported value: "bios": supported values: "uefi" (for arch "aarch64")`}},
		{"firmware in capitals", `{"firmware":"UEFI"}`, []string{
			`parameters.firmware: Unsupported value: "UEFI": supported values: "bios", "uefi" (did you mean "uefi"?)`}},
		{"resources not an object", `{"resources":"big"}`, []string{
			`parameters.resources: Invalid value: "big": must be an object`}},
		{"memory with a space", `{"resources":{"memory":"2 GB"}}`, []string{
			`parameters.resources.memory: Invalid value: "2 GB": is not a quantity (e.g. "2Gi")`}},
		{"memory in decimal gigabytes", `{"resources":{"memory":"2G"}}`, []string{
			`parameters.resources.memory: Invalid value: "2G": must be a whole number of MiB (binary suffixes: "2Gi", not "2G")`}},
		{"memory as a boolean", `{"resources":{"memory":true}}`, []string{
			`parameters.resources.memory: Invalid value: true: must be a quantity: a string such as "2Gi" or a number`}},
		{"negative memory", `{"resources":{"memory":-512}}`, []string{
			`parameters.resources.memory: Invalid value: -512: must be positive`}},
		{"memory beyond 1Pi", `{"resources":{"memory":"2Pi"}}`, []string{
			`parameters.resources.memory: Invalid value: "2Pi": must be at most 1Pi`}},
		{"astronomical exponent", `{"resources":{"memory":1e1000000000}}`, []string{
			`parameters.resources.memory: Invalid value: 1e1000000000: is out of range`}},
		{"fractional CPUs", `{"resources":{"cpu":"1500m"}}`, []string{
			`parameters.resources.cpu: Invalid value: "1500m": must be a whole number of CPUs (QEMU's smp)`}},
		{"zero CPUs", `{"resources":{"cpu":0}}`, []string{
			`parameters.resources.cpu: Invalid value: 0: must be positive`}},
		{"too many CPUs for x86_64", `{"resources":{"cpu":256}}`, []string{
			`parameters.resources.cpu: Invalid value: 256: must be at most 255 (for arch "x86_64")`}},
		{"too many CPUs for aarch64", `{"arch":"aarch64","resources":{"cpu":"16"}}`, []string{
			`parameters.resources.cpu: Invalid value: "16": must be at most 8 (for arch "aarch64")`}},
		{"disk below 1Mi", `{"resources":{"storage":"512Ki"}}`, []string{
			`parameters.resources.storage: Invalid value: "512Ki": must be at least 1Mi`}},
		{"disk of a few bytes", `{"resources":{"storage":"1000001"}}`, []string{
			`parameters.resources.storage: Invalid value: "1000001": must be at least 1Mi`}},
		{"disk not whole sectors", `{"resources":{"storage":"2000100"}}`, []string{
			`parameters.resources.storage: Invalid value: "2000100": must be a multiple of 512 bytes (a disk sector)`}},
		{"fraction of a byte", `{"resources":{"storage":"1048576.5"}}`, []string{
			`parameters.resources.storage: Invalid value: "1048576.5": must be a whole number of bytes`}},
		{"storage not an object", `{"storage":["fast"]}`, []string{
			`parameters.storage: Invalid value: ["fast"]: must be an object`}},
		{"storage class not a name", `{"storage":{"storageClassName":"Fast_SSD"}}`, []string{
			`parameters.storage.storageClassName: Invalid value: "Fast_SSD": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"storage class not a string", `{"storage":{"storageClassName":7}}`, []string{
			`parameters.storage.storageClassName: Invalid value: 7: must be a string`}},
		{"access modes without a storage class", `{"storage":{"accessModes":["ReadWriteOnce"]}}`, []string{
			`parameters.storage.accessModes: Forbidden: applies only with storage.storageClassName: without one the guest disk is an emptyDir`}},
		{"read-only access mode", `{"storage":{"storageClassName":"fast","accessModes":["ReadOnlyMany"]}}`, []string{
			`parameters.storage.accessModes[0]: Unsupported value: "ReadOnlyMany": supported values: "ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany" (the guest disk is written to)`}},
		{"misspelt access mode", `{"storage":{"storageClassName":"fast","accessModes":["ReadWriteOnse"]}}`, []string{
			`parameters.storage.accessModes[0]: Unsupported value: "ReadWriteOnse": supported values: "ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany" (did you mean "ReadWriteOnce"?)`}},
		{"duplicate access mode", `{"storage":{"storageClassName":"fast","accessModes":["ReadWriteOnce","ReadWriteOnce"]}}`, []string{
			`parameters.storage.accessModes[1]: Duplicate value: "ReadWriteOnce"`}},
		{"ReadWriteOncePod with others", `{"storage":{"storageClassName":"fast","accessModes":["ReadWriteOncePod","ReadWriteMany"]}}`, []string{
			`parameters.storage.accessModes: Invalid value: ["ReadWriteOncePod","ReadWriteMany"]: ReadWriteOncePod cannot be combined with other access modes`}},
		{"empty access modes", `{"storage":{"storageClassName":"fast","accessModes":[]}}`, []string{
			`parameters.storage.accessModes: Invalid value: []: must not be empty`}},
		{"access modes not a list", `{"storage":{"storageClassName":"fast","accessModes":"ReadWriteOnce"}}`, []string{
			`parameters.storage.accessModes: Invalid value: "ReadWriteOnce": must be a list of access modes`}},
		{"overhead without a percent sign", `{"storage":{"fsOverhead":"10"}}`, []string{
			`parameters.storage.fsOverhead: Invalid value: "10": must be a percentage from "0%" to "100%"`}},
		{"overhead above 100%", `{"storage":{"fsOverhead":"150%"}}`, []string{
			`parameters.storage.fsOverhead: Invalid value: "150%": must be a percentage from "0%" to "100%"`}},
		{"overhead as a number", `{"storage":{"fsOverhead":10}}`, []string{
			`parameters.storage.fsOverhead: Invalid value: 10: must be a percentage string such as "10%"`}},
		{"several mistakes, all reported in a stable order", `{"zzz":1,"arch":"arm","resources":{"cpu":"two","disk":"1Gi"}}`, []string{
			`parameters.zzz: Unsupported value: "zzz": unknown parameter; supported: "arch", "firmware", "machineType", "resources", "storage"`,
			`parameters.arch: Unsupported value: "arm": supported values: "aarch64", "x86_64"`,
			`parameters.resources.disk: Unsupported value: "disk": unknown parameter (did you mean "resources.storage"?)`,
			`parameters.resources.cpu: Invalid value: "two": is not a quantity (e.g. "2Gi")`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Validate(context.Background(), baseRequest(tc.params, qemuDriver("")))
			if diff := cmp.Diff(tc.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("Validate(%s) errors (-want +got):\n%s", tc.params, diff)
			}
		})
	}
}

// TestValidateRejectsBadRequests covers mistakes outside the parameters: the set's Qemu
// driver entry and the class's credentials and limits.
func TestValidateRejectsBadRequests(t *testing.T) {
	limits := func(l corev1.ResourceList) func(*provisioner.Request) {
		return func(r *provisioner.Request) {
			r.Class.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{Limits: l}}
		}
	}
	for _, tc := range []struct {
		name, params string
		drivers      []vtv1alpha1.DriverSpec
		change       func(*provisioner.Request)
		want         []string
	}{
		{name: "two Qemu drivers", drivers: []vtv1alpha1.DriverSpec{qemuDriver(""), {Name: "qemu2", Type: QemuDriverType}}, want: []string{
			`spec.template.spec.drivers[1].type: Forbidden: only one jumpstarter_driver_qemu.driver.Qemu driver per instance: its sockets live at fixed paths in /shared (spec.template.spec.drivers[0] is "qemu")`}},
		{name: "config not an object", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`["x86_64"]`)}, want: []string{
			`spec.template.spec.drivers[0].config: Invalid value: "array": must be a JSON object`}},
		{name: "another launcher socket", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"launcher_socket":"/tmp/l.sock"}`)}, want: []string{
			`spec.template.spec.drivers[0].config.launcher_socket: Invalid value: "/tmp/l.sock": must be "/shared/launcher.sock" or unset: the target-runtime container serves the launcher there`}},
		{name: "BIOS for the driver's aarch64", params: `{"firmware":"bios"}`, drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"aarch64"}`)}, want: []string{
			`parameters.firmware: Unsupported value: "bios": supported values: "uefi" (for arch "aarch64", set by spec.template.spec.drivers[0].config.arch)`}},
		{name: "guest memory above the limit", params: `{"resources":{"memory":"4Gi"}}`, change: limits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}), want: []string{
			`parameters.resources.memory: Invalid value: "4Gi": is more than the runtime container's memory limit 2Gi (spec.scheduling.resources.limits[memory]): the guest would be OOM-killed`}},
		{name: "disk above the ephemeral-storage limit", params: `{"resources":{"storage":"20Gi"}}`, change: limits(corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")}), want: []string{
			`parameters.resources.storage: Invalid value: "20Gi": needs a 22Gi emptyDir (with storage.fsOverhead), more than the runtime container's ephemeral-storage limit 10Gi (spec.scheduling.resources.limits[ephemeral-storage])`}},
		{name: "empty credentials name", change: func(r *provisioner.Request) { r.Class.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{} }, want: []string{
			`spec.credentialsSecretRef.name: Required value: names the Secret whose keys become the containers' environment`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drivers := tc.drivers
			if drivers == nil {
				drivers = []vtv1alpha1.DriverSpec{qemuDriver("")}
			}
			req := baseRequest(tc.params, drivers...)
			if tc.change != nil {
				tc.change(req)
			}
			p := New()
			err := p.Validate(context.Background(), req)
			if diff := cmp.Diff(tc.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
			// RenderPod and EnrichDrivers refuse the same input the same way.
			if _, perr := p.RenderPod(context.Background(), req); perr == nil || perr.Error() != err.Error() {
				t.Errorf("RenderPod error %v, want %v", perr, err)
			}
			if _, derr := p.EnrichDrivers(context.Background(), req); derr == nil || derr.Error() != err.Error() {
				t.Errorf("EnrichDrivers error %v, want %v", derr, err)
			}
		})
	}
}

// TestValidateAccepts covers inputs that look odd but are fine.
func TestValidateAccepts(t *testing.T) {
	for _, params := range []string{
		``, `{}`, `null`,
		`{"arch":null,"resources":{"cpu":null},"storage":null}`, // null is unset
		`{"resources":{"cpu":"2000m","memory":"0.5Gi","storage":"10G"}}`,
		`{"resources":{"cpu":2.0,"memory":1073741824,"storage":1e10}}`,
		`{"storage":{"storageClassName":""}}`, // empty class: the emptyDir
		`{"arch":"aarch64","machineType":"virt","firmware":"uefi","resources":{"cpu":8}}`,
		`{"firmware":"bios","storage":{"storageClassName":"fast","accessModes":["ReadWriteMany","ReadWriteOnce"],"fsOverhead":"0%"}}`,
	} {
		if err := New().Validate(context.Background(), baseRequest(params, qemuDriver(""))); err != nil {
			t.Errorf("Validate(%s): %v", params, err)
		}
	}
}

// TestValidateErrorsAreFieldErrors checks that the reconciler can read the field path and
// type of every error, not just its text.
func TestValidateErrorsAreFieldErrors(t *testing.T) {
	err := New().Validate(context.Background(), baseRequest(`{"resources":{"memory":"2 GB"}}`))
	want := field.ErrorList{field.Invalid(field.NewPath("parameters", "resources", "memory"), "2 GB", `is not a quantity (e.g. "2Gi")`)}
	if diff := cmp.Diff(want, err.(*provisioner.Error).Fields); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := New().Validate(context.Background(), nil); provisioner.CodeOf(err) != provisioner.CodeInternal {
		t.Errorf("nil request: %v, want an internal error", err)
	}
}
