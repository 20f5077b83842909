package exporterset_test

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
)

// ctrlConfig lets several managers in one test binary register controllers of the same name.
func ctrlConfig() config.Controller {
	return config.Controller{SkipNameValidation: ptr.To(true)}
}
