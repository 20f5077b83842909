package provisioner

import "context"

// Warning is something in the input a person should look at that does not stop the set: for
// example a driver type the provisioner does not know, which may well be a third-party driver.
// Blocking on it would refuse valid sets, saying nothing would hide a likely typo.
type Warning struct {
	// Field is the path of the value the warning is about, rooted like field errors
	// (e.g. "spec.template.spec.drivers[2].type").
	Field string `json:"field"`
	// Message says what looks wrong and what happens to it.
	Message string `json:"message"`
}

// String writes the warning as a Warning event's note shows it: "<field>: <message>".
func (w Warning) String() string {
	if w.Field == "" {
		return w.Message
	}
	return w.Field + ": " + w.Message
}

// WarningValidator is implemented by a Provisioner that can report warnings beside Validate's
// verdict. It is a separate, optional interface so that existing provisioners and plugins need
// no change; the reconciler checks for it with a type assertion.
type WarningValidator interface {
	// Warnings returns the warnings of req (the same request Validate gets), in a stable
	// order, or nil. Its error follows the codes of Validate's; an input Validate rejects may
	// have warnings too. Like Validate it must be deterministic and must not mutate req.
	Warnings(ctx context.Context, req *Request) ([]Warning, error)
}
