package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// fuzzSeeds start the fuzz target and, rendered in every fuzz class, are dry-run against
// the real apiserver by TestFuzzSeedPodsAcceptedByAPIServer.
var fuzzSeeds = []struct {
	params, driverConfig string
	refused              bool // by Validate, in every class
}{
	{``, ``, false},
	{`{}`, `{}`, false},
	{`{"arch":"x86_64","machineType":"q35","resources":{"cpu":2,"memory":"2Gi","storage":"20Gi"}}`, `{"arch":"x86_64","smp":2,"mem":"2G"}`, false},
	{`{"arch":"aarch64","resources":{"cpu":"8","memory":"4096Mi","storage":"16Gi"}}`, ``, false},
	{`{"firmware":"bios","resources":{"storage":"1Mi"}}`, `{"hostfwd":{}}`, false},
	{`{"storage":{"storageClassName":"fast","accessModes":["ReadWriteMany","ReadWriteOnce"],"fsOverhead":"100%"}}`, `null`, false},
	{`{"storage":{"storageClassName":"a.b-c","accessModes":["ReadWriteOncePod"]},"resources":{"storage":"1.5Gi"}}`, `{"default_partitions":{"OVMF_CODE.fd":"/x"}}`, false},
	{`{"resources":{"cpu":"2000m","memory":"0.5Gi","storage":"10G"},"storage":{"fsOverhead":"0%"}}`, `{"hostfwd":{"web":{"hostport":2222,"guestport":80}}}`, false},
	{`{"arch":null,"resources":null,"storage":{"storageClassName":""}}`, `{"arch":"aarch64","hostname":"fixed"}`, false},
	{`{"resources":{"memory":"1Pi","storage":"1Pi"}}`, `{"hostfwd":{"ssh":{"hostport":2222,"guestport":22}}}`, false},
	// Refused: each is one of the validation table's mistakes.
	{`{"resourses":{}}`, ``, true},
	{`{"resources":{"memory":"2 GB"}}`, ``, true},
	{`{"arch":"aarch64","firmware":"bios"}`, ``, true},
	{`{"resources":{"cpu":1e1000000000}}`, ``, true},
	{`[]`, ``, true},
	{`{}`, `[1]`, true},
	{`{}`, `{"launcher_socket":"/tmp/x.sock"}`, true},
	{`{}`, `{"hostfwd":{"ssh":{"hostport":"x"}}}`, true},
	{`{}`, `{"memory":"2G"}`, true},
	{`{}`, `{"mem":"2Gi","smp":"two"}`, true},
}

// fuzzClasses are the classes the fuzz target renders in: none of scheduling, KVM with
// tolerations, tight limits, and credentials.
var fuzzClasses = []vtv1alpha1.VirtualTargetClassSpec{
	{Provisioner: Name},
	{Provisioner: Name, Scheduling: &vtv1alpha1.Scheduling{
		NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"},
		Tolerations:  []corev1.Toleration{{Key: "jumpstarter.dev/kvm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Resources: &corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		},
	}},
	{Provisioner: Name, Scheduling: &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("30Gi")},
		Requests: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
		},
	}}},
	{Provisioner: Name, CredentialsSecretRef: &corev1.LocalObjectReference{Name: "creds"}},
}

// fuzzRequest is a request with the given parameters and Qemu driver config (empty: none)
// in fuzz class classIndex (modulo their number), beside a ref entry.
func fuzzRequest(params, driverConfig string, classIndex int) *provisioner.Request {
	req := baseRequest(params, qemuDriver(driverConfig), vtv1alpha1.DriverSpec{Name: "power", Ref: "qemu.power"})
	req.Class.Spec = *fuzzClasses[classIndex%len(fuzzClasses)].DeepCopy()
	return req
}

// FuzzValidateRender checks that Validate, RenderPod and EnrichDrivers never panic, agree
// with each other, are deterministic, leave the request alone, and that whatever they
// render has the Pod layout and the security settings the package promises. The real Pod
// validation is the apiserver's (TestFuzzSeedPodsAcceptedByAPIServer); this target needs none.
func FuzzValidateRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		for i := range fuzzClasses {
			f.Add([]byte(s.params), []byte(s.driverConfig), uint8(i))
		}
	}
	p := New()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, params, driverConfig []byte, classIndex uint8) {
		req := fuzzRequest(string(params), string(driverConfig), int(classIndex))
		before := snapshot(req)

		verr := p.Validate(ctx, req)
		pod, perr := p.RenderPod(ctx, req)
		drivers, derr := p.EnrichDrivers(ctx, req)
		if !apiequality.Semantic.DeepEqual(before, snapshot(req)) {
			t.Fatal("the request was modified")
		}
		if verr != nil {
			if !provisioner.IsInvalid(verr) {
				t.Fatalf("Validate: not an invalid-input error: %v", verr)
			}
			if perr == nil || derr == nil || perr.Error() != verr.Error() || derr.Error() != verr.Error() {
				t.Fatalf("Validate refused (%v) but RenderPod gave %v and EnrichDrivers %v", verr, perr, derr)
			}
			return
		}
		if perr != nil || derr != nil {
			t.Fatalf("Validate accepted, RenderPod: %v, EnrichDrivers: %v", perr, derr)
		}
		pod2, _ := p.RenderPod(ctx, req)
		drivers2, _ := p.EnrichDrivers(ctx, req)
		if !apiequality.Semantic.DeepEqual(pod, pod2) || !apiequality.Semantic.DeepEqual(drivers, drivers2) {
			t.Fatal("rendering twice gave different results")
		}
		checkPod(t, pod)
		checkDrivers(t, drivers, driverConfig)
	})
}

// snapshot copies what a provisioner must not modify.
func snapshot(req *provisioner.Request) []any {
	return []any{req.Set.DeepCopy(), req.Class.DeepCopy(), bytes.Clone(req.Parameters), req.Images, req.Exporter.DeepCopy(), req.ConfigSecretName}
}

// checkPod asserts the layout and security invariants of a rendered Pod.
func checkPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	s := pod.Spec
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", s.RestartPolicy)
	}
	names := func(cs []corev1.Container) (n []string) {
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	if got := names(s.InitContainers); !slices.Equal(got, []string{LauncherInitContainer, RuntimeContainer}) {
		t.Errorf("init containers %v", got)
	}
	if got := names(s.Containers); !slices.Equal(got, []string{ExporterContainer}) {
		t.Errorf("containers %v", got)
	}
	if rt := container(pod, RuntimeContainer); rt == nil || rt.RestartPolicy == nil || *rt.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("%s is not a native sidecar", RuntimeContainer)
	}
	if a := pod.Annotations[AnnotationAccelerator]; a != AcceleratorKVM && a != AcceleratorTCG {
		t.Errorf("accelerator annotation %q", a)
	}
	if sc := s.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil {
		t.Errorf("pod security context %+v", sc)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		if _, dup := volumes[v.Name]; dup {
			t.Errorf("volume %q twice", v.Name)
		}
		volumes[v.Name] = v
		if v.HostPath != nil {
			t.Errorf("volume %q is a hostPath", v.Name)
		}
		if v.EmptyDir != nil && (v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0) {
			t.Errorf("emptyDir %q unbounded", v.Name)
		}
		if e := v.Ephemeral; e != nil {
			q := e.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage]
			if q.Sign() <= 0 || len(e.VolumeClaimTemplate.Spec.AccessModes) == 0 {
				t.Errorf("ephemeral volume %q: %+v", v.Name, e.VolumeClaimTemplate.Spec)
			}
		}
	}
	for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
		if c.Image == "" || c.ImagePullPolicy == "" {
			t.Errorf("%s: image %q pull policy %q", c.Name, c.Image, c.ImagePullPolicy)
		}
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Errorf("%s: no security context", c.Name)
			continue
		case sc.Privileged == nil || *sc.Privileged,
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot,
			sc.RunAsUser == nil || *sc.RunAsUser != RunAsUser,
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0,
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("%s: security context %+v", c.Name, sc)
		}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("%s mounts missing volume %q", c.Name, m.Name)
			}
		}
		for name, limit := range c.Resources.Limits {
			if req, ok := c.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
				t.Errorf("%s: %s request %s above limit %s", c.Name, name, req.String(), limit.String())
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Errorf("%s: env %s from a reference; credentials go by envFrom", c.Name, e.Name)
			}
		}
	}
	exp := container(pod, ExporterContainer)
	if exp == nil {
		return
	}
	mounted := false
	for _, m := range exp.VolumeMounts {
		if v := volumes[m.Name]; m.MountPath == provisioner.ExporterConfigDir && m.ReadOnly && v.Secret != nil && v.Secret.SecretName != "" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("exporter does not mount the config Secret read-only at %s", provisioner.ExporterConfigDir)
	}
	if !slices.Contains(exp.Env, corev1.EnvVar{Name: EnvLauncherSocket, Value: LauncherSocketPath}) {
		t.Errorf("exporter env %v", exp.Env)
	}
}

// checkDrivers asserts the invariants of the enriched drivers, the Qemu entry's original
// config being given: every key it sets keeps its value.
func checkDrivers(t *testing.T, drivers []vtv1alpha1.DriverSpec, original []byte) {
	t.Helper()
	var orig map[string]any
	if len(bytes.TrimSpace(original)) > 0 {
		v, err := fieldcheck.DecodeJSON(original)
		if err != nil {
			t.Fatalf("accepted a config that is not JSON: %q", original)
		}
		orig, _ = v.(map[string]any)
	}
	seen := map[string]bool{}
	qemus := 0
	for _, d := range drivers {
		if seen[d.Name] {
			t.Errorf("driver name %q twice", d.Name)
		}
		seen[d.Name] = true
		if d.Type != QemuDriverType {
			continue
		}
		qemus++
		var cfg map[string]any
		dec := json.NewDecoder(bytes.NewReader(d.Config.Raw))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			t.Fatalf("qemu config %s: %v", d.Config.Raw, err)
		}
		if cfg["launcher_socket"] != LauncherSocketPath {
			t.Errorf("launcher_socket %v", cfg["launcher_socket"])
		}
		for _, k := range []string{"arch", "smp", "mem", "hostfwd"} {
			if cfg[k] == nil {
				t.Errorf("qemu config without %s: %s", k, d.Config.Raw)
			}
		}
		for k, v := range orig {
			if v != nil && !apiequality.Semantic.DeepEqual(cfg[k], v) {
				t.Errorf("explicit %s %v became %v", k, v, cfg[k])
			}
		}
		if !explicit(orig, "smp") {
			if n, ok := cfg["smp"].(json.Number); !ok {
				t.Errorf("smp %v is not a number", cfg["smp"])
			} else if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
				t.Errorf("smp %s is not an integer", n)
			}
		}
	}
	if qemus != 1 {
		t.Errorf("%d qemu drivers", qemus)
	}
}
