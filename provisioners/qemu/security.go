package qemu

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/exporterset/exporterset/provisioner"
)

// podSecurity runs the whole Pod as RunAsUser with fsGroup set, so the emptyDirs and the
// ephemeral volume are group-owned and writable by every container. OnRootMismatch skips the
// recursive chown of a large guest disk when its root already has the right group.
func podSecurity() *corev1.PodSecurityContext {
	onRootMismatch := corev1.FSGroupChangeOnRootMismatch
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr(true),
		RunAsUser:           ptr(RunAsUser),
		RunAsGroup:          ptr(RunAsUser),
		FSGroup:             ptr(RunAsUser),
		FSGroupChangePolicy: &onRootMismatch,
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity is the same for all three containers, the runtime included: QEMU needs
// no capability (user-mode networking, no tap devices), no privilege (KVM is a device the
// device plugin hands over, opened like a file) and no host path, so the exporter's
// restricted context fits it too. The Pod-level settings are repeated so that every
// container is restricted on its own, whatever the Pod says.
func containerSecurity() *corev1.SecurityContext {
	return provisioner.RestrictedSecurityContext()
}
