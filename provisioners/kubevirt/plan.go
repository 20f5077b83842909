package kubevirt

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

var (
	driversPath     = field.NewPath("spec", "template", "spec", "drivers")
	credentialsPath = field.NewPath("spec", "credentialsSecretRef", "name")
)

// plan is everything Validate checked and the other methods build from: one decision, made
// once, so that they can never disagree.
type plan struct {
	params *parameters
	// credentials is the name of the class's credentials Secret: the Pod mounts its
	// kubeconfig key for the port-forward sidecar.
	credentials string
}

// newPlan validates req. Its error is CodeInvalid with field errors for bad input, or
// CodeInternal for a request the reconciler should never send.
func newPlan(req *provisioner.Request) (*plan, error) {
	if req == nil || req.Set == nil || req.Class == nil {
		return nil, provisioner.Errorf("kubevirt: request without set or class")
	}
	params, errs := parseParameters(req.Parameters)
	pl := &plan{params: params}
	pl.credentials, errs = checkCredentials(req.Class, errs)
	errs = append(errs, checkDrivers(req.Set.Spec.Template.Spec.Drivers)...)
	if len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	return pl, nil
}

// checkCredentials requires the class's credentials Secret: it is the only way the remote
// cluster's kubeconfig reaches the provisioner (Request.Credentials) and the Pod.
func checkCredentials(class *vtv1alpha1.VirtualTargetClass, errs field.ErrorList) (string, field.ErrorList) {
	if class.Spec.CredentialsSecretRef == nil || class.Spec.CredentialsSecretRef.Name == "" {
		return "", append(errs, field.Required(credentialsPath, "names the Secret holding the remote KubeVirt cluster's kubeconfig"))
	}
	name := class.Spec.CredentialsSecretRef.Name
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return "", append(errs, field.Invalid(credentialsPath, name, strings.Join(msgs, "; ")))
	}
	return name, errs
}
