package kubevirt

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Labels and annotations this provisioner writes, on the remote VM and on the Exporter.
const (
	// AnnotationVM is the annotation CreateExternal returns: "<namespace>/<name>" of the VM.
	AnnotationVM = Name + "/vm"

	// LabelSetUID, LabelSetNamespace and LabelSet record the ExporterSet on the VM, so that
	// InventoryExternal lists a set's VMs. The UID tells apart sets of the same name in two
	// management clusters that share a VM namespace.
	LabelSetUID       = Name + "/set-uid"
	LabelSetNamespace = Name + "/set-namespace"
	LabelSet          = Name + "/set"
	// LabelInstance and LabelInstanceUID record the Exporter the VM was created for.
	LabelInstance    = Name + "/instance"
	LabelInstanceUID = Name + "/instance-uid"
	// AnnotationSet and AnnotationInstance hold the full names, which labels may shorten.
	AnnotationSet      = Name + "/set"
	AnnotationInstance = Name + "/instance"
)

// vmNameMax keeps VM names short enough for what KubeVirt derives from them: the VMI has the
// same name and its virt-launcher Pod is "virt-launcher-<name>-<5 chars>", a name whose
// hostname must fit a 63-character DNS label.
const vmNameMax = 40

// vmName is the VM of an Exporter: a readable prefix of its name and a hash of its namespace,
// name and UID. The hash makes it unique in a VM namespace shared by many management
// namespaces (and clusters), and a new Exporter of the same name (another UID) gets another
// VM.
func vmName(e *jumpstarterv1alpha1.Exporter) string {
	sum := sha256.Sum256([]byte(e.Namespace + "/" + e.Name + "/" + string(e.UID)))
	hash := hex.EncodeToString(sum[:])[:10]
	prefix := strings.Trim(strings.ReplaceAll(strings.ToLower(e.Name), ".", "-"), "-")
	if len(prefix) > vmNameMax-len(hash)-1 {
		prefix = strings.TrimRight(prefix[:vmNameMax-len(hash)-1], "-")
	}
	if prefix == "" {
		return "vm-" + hash
	}
	return prefix + "-" + hash
}

// labelValue is s when it is a valid label value, else a prefix of it and a hash: names of
// sets and Exporters may be longer than a label value allows. The full name is in an
// annotation.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	prefix := s
	if len(prefix) > 52 {
		prefix = prefix[:52]
	}
	return strings.Trim(prefix, "-_.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// setLabels are the labels every VM of set carries: InventoryExternal selects on them.
func setLabels(set *vtv1alpha1.ExporterSet) map[string]string {
	l := map[string]string{
		LabelSetNamespace: set.Namespace,
		LabelSet:          labelValue(set.Name),
	}
	if set.UID != "" {
		l[LabelSetUID] = string(set.UID)
	}
	return l
}

// vmRef returns the namespace and name of an Exporter's VM: from its AnnotationVM when
// CreateExternal's annotations were recorded (so a changed namespace parameter still finds
// the VMs created before), else derived from the Exporter and the namespace parameter.
func vmRef(e *jumpstarterv1alpha1.Exporter, namespace string) types.NamespacedName {
	if ns, name, ok := strings.Cut(e.Annotations[AnnotationVM], "/"); ok && ns != "" && name != "" {
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	return types.NamespacedName{Namespace: namespace, Name: vmName(e)}
}

// dataVolumeName is the DataVolume of a VM's dataVolumeTemplates.
func dataVolumeName(vm string) string { return vm + "-disk" }
