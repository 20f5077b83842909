package exporterset

import "github.com/exporterset/exporterset/exporterset/internal/objects"

// Names of Jumpstarter objects the reconciler reads.
const (
	// DefaultCAConfigMap is the namespace's CA ConfigMap used when a class names none.
	DefaultCAConfigMap = objects.DefaultCAConfigMap
	// DefaultCAKey is the key of DefaultCAConfigMap.
	DefaultCAKey = objects.DefaultCAKey
	// TokenKey is the key of the Jumpstarter credential Secret holding the token.
	TokenKey = objects.TokenKey
)
