package jumpsim

import (
	"context"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/exporterset/exporterset/internal/exportercfg"
)

// exporterConfigFailure is what the exporter process of pod prints before it exits when its
// mounted config is unusable (not YAML, or an ExporterConfig of the wrong form: no token,
// a CA that is no PEM bundle, ...), worded as the real-node tier's stand-in exporter words
// it; "" when the config is usable, when the Pod mounts none, or with WithoutConfigChecks.
// A real exporter exits on such a file: the real node shows the container terminated with
// exit code 1 and this message (Pod Failed under restartPolicy Never), not a running
// exporter that cannot register.
func (s *Simulator) exporterConfigFailure(ctx context.Context, pod *corev1.Pod) (container, message string) {
	if !s.opts.configChecks {
		return "", ""
	}
	raw, src, ok := s.exporterConfigBytes(ctx, pod)
	if !ok {
		return "", "" // the mount check holds the Pod back until the Secret exists
	}
	if _, err := exportercfg.Load(raw); err != nil {
		file := path.Join(ExporterConfigDir, ExporterConfigKey)
		return src.container, fmt.Sprintf("exporter config %s: %v\n", file, err)
	}
	return "", ""
}

// configFailedStatus is pod's status after its exporter container exited at start with
// message: the container terminated (exit code 1, Error, its termination message), and under
// restartPolicy Never the Pod Failed with no message of its own, as a real kubelet shows it.
// (Under restartPolicy Always a real kubelet would restart it into CrashLoopBackOff; the
// simulated kubelet leaves such a Pod running, and presence reports the exporter unable to
// register.)
func configFailedStatus(pod *corev1.Pod, container, message string) corev1.PodStatus {
	st := terminalStatus(pod, 1, "Error", "", metav1.Now())
	st.Message = ""
	for i := range st.ContainerStatuses {
		if cs := &st.ContainerStatuses[i]; cs.Name == container && cs.State.Terminated != nil {
			cs.State.Terminated.Message = message
		}
	}
	return st
}
