package jumpsim

import (
	"context"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
)

// ExporterConfigDir is where the exporter container reads its config (contract §3.4).
const ExporterConfigDir = "/etc/jumpstarter/exporters"

// ExporterConfigKey is the file (and Secret key) of the exporter config.
const ExporterConfigKey = "config.yaml"

// configSource locates the exporter config of a Pod: the container that mounts it and the
// Secret and key the file comes from.
type configSource struct {
	container string
	secret    string
	key       string
}

// findConfigSource finds the container mounting ExporterConfigDir (or the config file itself
// through a subPath) and resolves the volume to a Secret key, following item remapping.
func findConfigSource(pod *corev1.Pod) (configSource, bool) {
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			var file string
			switch mp := path.Clean(m.MountPath); {
			case mp == ExporterConfigDir && m.SubPath == "":
				file = ExporterConfigKey
			case mp == ExporterConfigDir && m.SubPath != "":
				continue // a subdirectory of the volume: not laid out as the exporter expects
			case mp == path.Join(ExporterConfigDir, ExporterConfigKey) && m.SubPath != "":
				file = m.SubPath
			default:
				continue
			}
			if secret, key, ok := volumeSecretKey(pod, m.Name, file); ok {
				return configSource{container: c.Name, secret: secret, key: key}, true
			}
		}
	}
	return configSource{}, false
}

// volumeSecretKey resolves the file at path file of volume name to a Secret and key.
func volumeSecretKey(pod *corev1.Pod, name, file string) (string, string, bool) {
	keyFor := func(items []corev1.KeyToPath) (string, bool) {
		if len(items) == 0 {
			return file, true
		}
		for _, it := range items {
			if path.Clean(it.Path) == file {
				return it.Key, true
			}
		}
		return "", false
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != name {
			continue
		}
		if v.Secret != nil {
			key, ok := keyFor(v.Secret.Items)
			return v.Secret.SecretName, key, ok
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret == nil {
					continue
				}
				if key, ok := keyFor(src.Secret.Items); ok {
					return src.Secret.Name, key, true
				}
			}
		}
	}
	return "", "", false
}

// exporterConfigBytes reads the file a Pod's exporter config mount holds, from the cache.
func (s *Simulator) exporterConfigBytes(ctx context.Context, pod *corev1.Pod) ([]byte, configSource, bool) {
	src, ok := findConfigSource(pod)
	if !ok {
		return nil, src, false
	}
	var sec corev1.Secret
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: src.secret}, &sec); err != nil {
		return nil, src, false
	}
	raw, ok := sec.Data[src.key]
	return raw, src, ok
}

// readExporterConfig reads and parses a Pod's exporter config from the cache. It does not
// check it: a config that parses but would not load has stopped the exporter at start
// (configfailure.go), and one that changed under a running exporter is judged by
// configProblem.
func (s *Simulator) readExporterConfig(ctx context.Context, pod *corev1.Pod) (*exportercfg.Config, configSource, bool) {
	raw, src, ok := s.exporterConfigBytes(ctx, pod)
	if !ok {
		return nil, src, false
	}
	cfg, err := exportercfg.Parse(raw)
	if err != nil {
		return nil, src, false
	}
	return cfg, src, true
}

// runningSince is when the exporter process in pod started: the config-mounting container's
// start, else the Pod's.
func runningSince(pod *corev1.Pod, container string) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Running != nil {
			return cs.State.Running.StartedAt.Time
		}
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}

// controllerUID returns the UID of obj's controller when it is of kind.
func controllerUID(obj metav1.Object, kind string) (types.UID, string, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != kind {
		return "", "", false
	}
	return ref.UID, ref.Name, true
}

// exitedAfterLease reports the lease after which the exporter process in a Running pod
// exited: a lease of the Pod's Exporter that ended while the process ran, when the Pod's
// config says exitOnLeaseEnd. Time stamps have second precision, so a lease that ended in
// the same second the process started counts as served by it.
func (s *Simulator) exitedAfterLease(ctx context.Context, pod *corev1.Pod) (*jsv1.Lease, bool) {
	exUID, exName, ok := controllerUID(pod, "Exporter")
	if !ok {
		return nil, false
	}
	cfg, src, ok := s.readExporterConfig(ctx, pod)
	if !ok || !cfg.ExitOnLeaseEnd {
		return nil, false
	}
	var leases jsv1.LeaseList
	if err := s.client.List(ctx, &leases, client.InNamespace(pod.Namespace), client.MatchingFields{indexLeaseExporter: exName}); err != nil {
		return nil, false
	}
	since := runningSince(pod, src.container).Truncate(time.Second)
	for i := range leases.Items {
		l := &leases.Items[i]
		if !l.Status.Ended || l.Status.BeginTime == nil {
			continue
		}
		if uid, _, ok := controllerUID(l, "Exporter"); ok && uid != exUID {
			continue // a lease of an earlier Exporter with the same name
		}
		end := time.Now()
		if l.Status.EndTime != nil {
			end = l.Status.EndTime.Time
		}
		if end.Before(since) || s.kube.wasHandled(pod.UID, l.UID) {
			continue
		}
		if s.hooks.holdsExit(exUID, pod.UID, l.Name) {
			continue // its afterLease hook runs first
		}
		return l, true
	}
	return nil, false
}

// exitsOnLeaseEnd reports whether the exporter process of ex, if one runs, exits when its
// lease ends: a Running Pod controlled by ex whose config says exitOnLeaseEnd.
func (s *Simulator) exitsOnLeaseEnd(ctx context.Context, ex *jsv1.Exporter) bool {
	pods, err := s.controlledPods(ctx, ex.Namespace, ex.UID)
	if err != nil {
		return false
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		if cfg, _, ok := s.readExporterConfig(ctx, pod); ok && cfg.ExitOnLeaseEnd {
			return true
		}
	}
	return false
}
