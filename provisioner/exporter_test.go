package provisioner_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/exporterset/exporterset/provisioner"
)

func TestAddExporterContainer(t *testing.T) {
	req := &provisioner.Request{
		ConfigSecretName: "pool-a1b2c-config",
		Images:           provisioner.Images{Exporter: provisioner.Image{Image: "example.com/exporter:1", PullPolicy: corev1.PullAlways}},
	}
	target := corev1.Container{Name: "target", Image: "busybox"}
	other := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyAlways, // breaks the contract: the helper must fix it
		Containers:    []corev1.Container{target},
		Volumes:       []corev1.Volume{other},
	}}

	c := provisioner.AddExporterContainer(pod, req, provisioner.WithConfigFileMode(0o440))
	c.Env = []corev1.EnvVar{{Name: "EXTRA", Value: "1"}} // the returned container is the Pod's

	if got := []string{pod.Spec.Containers[0].Name, pod.Spec.Containers[1].Name}; !slices.Equal(got, []string{"exporter", "target"}) {
		t.Fatalf("containers %v, want the exporter first, then the target", got)
	}
	exp := pod.Spec.Containers[0]
	want := corev1.Container{
		Name:            provisioner.ExporterContainerName,
		Image:           "example.com/exporter:1",
		ImagePullPolicy: corev1.PullAlways,
		Command:         []string{"jmp", "run", "--exporter-config", "/etc/jumpstarter/exporters/config.yaml"},
		Env:             []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "exporter-config", MountPath: "/etc/jumpstarter/exporters", ReadOnly: true}},
		SecurityContext: provisioner.RestrictedSecurityContext(),
	}
	if !apiequality.Semantic.DeepEqual(exp, want) {
		t.Errorf("exporter container\n got %+v\nwant %+v", exp, want)
	}
	mode := int32(0o440)
	wantVol := corev1.Volume{Name: "exporter-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "pool-a1b2c-config", Items: []corev1.KeyToPath{{Key: "config.yaml", Path: "config.yaml"}}, DefaultMode: &mode,
	}}}
	if !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, []corev1.Volume{other, wantVol}) {
		t.Errorf("volumes %+v, want the caller's then the config Secret's", pod.Spec.Volumes)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.Spec.RestartPolicy)
	}

	sc := provisioner.RestrictedSecurityContext()
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("RestrictedSecurityContext %+v is not restricted", sc)
	}
	sc.Capabilities.Drop = nil
	if provisioner.RestrictedSecurityContext().Capabilities.Drop == nil {
		t.Error("RestrictedSecurityContext shares its value between calls")
	}

	plain := &corev1.Pod{}
	provisioner.AddExporterContainer(plain, req)
	if m := plain.Spec.Volumes[0].Secret.DefaultMode; m != nil {
		t.Errorf("without WithConfigFileMode, defaultMode is %o, want unset (Kubernetes' 0644)", *m)
	}
}
