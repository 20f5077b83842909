package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImageOr(t *testing.T) {
	fallback := Image{Image: "fallback", PullPolicy: corev1.PullAlways}
	if got := ImageOr(Image{PullPolicy: corev1.PullNever}, fallback); got != fallback {
		t.Errorf("no image: %+v, want the fallback whole", got)
	}
	if got := ImageOr(Image{Image: "mine"}, fallback); got != (Image{Image: "mine", PullPolicy: corev1.PullIfNotPresent}) {
		t.Errorf("image without policy: %+v", got)
	}
	if got := ModuleVersion(); got == "" {
		t.Error("ModuleVersion is empty")
	}
}
