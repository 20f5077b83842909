package exporterset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// specHash hashes everything an instance is built from: the template, the merged parameters
// and the lease hooks taken out of them,
// the resolved images, the recycle strategy, and the class fields that shape the Pod. A
// change of any of them rolls idle instances. Binding mode, reclaim policy and the CA bundle
// are left out: they change what the set does with instances, or are re-synced in place.
func specHash(req *provisioner.Request, hooks string) string {
	c := req.Class.Spec
	b, err := json.Marshal(struct {
		Template    vtv1alpha1.ExporterTemplate
		Parameters  json.RawMessage
		Images      provisioner.Images
		Recycle     vtv1alpha1.RecycleStrategy
		Provisioner string
		Scheduling  *vtv1alpha1.Scheduling
		Credentials any
		Hooks       string `json:",omitempty"` // omitted when none: old hashes stay valid
	}{req.Set.Spec.Template, req.Parameters, req.Images, req.Set.Spec.RecycleStrategy, c.Provisioner, c.Scheduling, c.CredentialsSecretRef, hooks})
	if err != nil {
		// Only unmarshalable values could fail, and these types have none.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}
