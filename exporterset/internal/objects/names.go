package objects

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// maxSetPrefix keeps instance names (and the "-config" Secret beside them) well inside the
// 63-character label limit that Pod hostnames derive from.
const maxSetPrefix = 40

// InstanceName is the Exporter name of the set's seq-th created instance. Names are a pure
// function of the set's UID and a sequence number kept in status, so a reconcile working from
// a stale cache computes the name an earlier reconcile already created and gets AlreadyExists
// instead of creating a second instance; the UID keeps a recreated set from reusing names.
func InstanceName(setName, setUID string, seq int64) string {
	sum := sha256.Sum256([]byte(setUID + "/" + strconv.FormatInt(seq, 10)))
	suffix := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:6]
	prefix := setName
	if len(prefix) > maxSetPrefix {
		prefix = strings.TrimRight(prefix[:maxSetPrefix], "-.")
	}
	return prefix + "-" + suffix
}

// ConfigSecretName is the name of an instance's exporter config Secret.
func ConfigSecretName(exporterName string) string { return exporterName + "-config" }

// InstanceLabels are the labels of the set's Exporters: the template's plus ours (the spec
// hash left out when specHash is "").
func InstanceLabels(set *vtv1alpha1.ExporterSet, specHash string) map[string]string {
	out := make(map[string]string, len(set.Spec.Template.Metadata.Labels)+2)
	for k, v := range set.Spec.Template.Metadata.Labels {
		out[k] = v
	}
	out[pool.LabelSet] = set.Name
	if specHash != "" {
		out[pool.LabelSpecHash] = specHash
	}
	return out
}

// SetOwnerOf is the name of the ExporterSet controlling o, if any.
func SetOwnerOf(o metav1.Object) string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "ExporterSet" || ref.APIVersion != vtv1alpha1.GroupVersion.String() {
		return ""
	}
	return ref.Name
}

// IsControlledBy reports whether obj's controller is the object with uid.
func IsControlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// SetKey is the key the controllers remember a set by (internal/state): namespace/name.
func SetKey(set metav1.Object) string { return set.GetNamespace() + "/" + set.GetName() }
