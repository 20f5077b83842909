package exporterset

// Names of Jumpstarter objects the reconciler reads.
const (
	// DefaultCAConfigMap is the namespace's CA ConfigMap used when a class names none.
	DefaultCAConfigMap = "jumpstarter-service-ca-cert"
	// DefaultCAKey is the key of DefaultCAConfigMap.
	DefaultCAKey = "ca.crt"
	// TokenKey is the key of the Jumpstarter credential Secret holding the token.
	TokenKey = "token"
)
