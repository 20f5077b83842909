package exporterset

import "github.com/exporterset/exporterset/exporterset/internal/objects"

// ConfigSecretName is the name of an instance's exporter config Secret.
func ConfigSecretName(exporterName string) string { return objects.ConfigSecretName(exporterName) }
