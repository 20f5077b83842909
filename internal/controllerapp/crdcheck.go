package controllerapp

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// prunedStatusFields are the ExporterSet status fields of ours that upstream Jumpstarter's
// CRD lacks, with what becomes of each when the API server prunes them
// (exporterset/pruned.go keeps the first two in memory).
var prunedStatusFields = []struct{ field, fate string }{
	{"surplusSince", "the scale-down cooldown clock is kept in memory (a restart starts it again)"},
	{"instanceSequence", "the instance name sequence is kept in memory (a restart recomputes it from the instances)"},
	{"observedGeneration", "not reported: the status does not say which spec it reflects"},
	{"failingReplicas", "not reported: failing instances show only in conditions and events"},
}

// upstreamCRDPhrase starts the notice; tests look for it.
const upstreamCRDPhrase = "the installed ExporterSet CRD is upstream Jumpstarter's"

// prunedFields reads the served ExporterSet schema from the API server's OpenAPI v3 document
// (readable by every authenticated user: no RBAC on CRDs needed, so it works under
// upstream's operator's namespaced Role too) and returns those of prunedStatusFields that
// its status lacks. An error means the schema could not be read; nothing is concluded then.
func prunedFields(cfg *rest.Config) ([]string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		return nil, err
	}
	gv, ok := paths["apis/"+vtv1alpha1.GroupVersion.Group+"/"+vtv1alpha1.GroupVersion.Version]
	if !ok {
		return nil, fmt.Errorf("the API server publishes no OpenAPI v3 schema for %s", vtv1alpha1.GroupVersion)
	}
	b, err := gv.Schema("application/json")
	if err != nil {
		return nil, err
	}
	return missingStatusFields(b)
}

// missingStatusFields finds the ExporterSet schema in an OpenAPI v3 document and returns the
// prunedStatusFields its status lacks.
func missingStatusFields(doc []byte) ([]string, error) {
	var d struct {
		Components struct {
			Schemas map[string]struct {
				GVK []struct {
					Group, Version, Kind string
				} `json:"x-kubernetes-group-version-kind"`
				Properties struct {
					Status struct {
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"status"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	for _, s := range d.Components.Schemas {
		if len(s.GVK) != 1 || s.GVK[0].Kind != "ExporterSet" || s.GVK[0].Group != vtv1alpha1.GroupVersion.Group {
			continue
		}
		var missing []string
		for _, f := range prunedStatusFields {
			if _, ok := s.Properties.Status.Properties[f.field]; !ok {
				missing = append(missing, f.field)
			}
		}
		return missing, nil
	}
	return nil, fmt.Errorf("no ExporterSet schema in the OpenAPI document of %s", vtv1alpha1.GroupVersion)
}

// upstreamCRDNote says what the pruning of missing costs and how to install our CRD.
func upstreamCRDNote(missing []string) string {
	var fates []string
	for _, f := range prunedStatusFields {
		for _, m := range missing {
			if m == f.field {
				fates = append(fates, f.field+": "+f.fate)
			}
		}
	}
	return fmt.Sprintf("%s (its status schema lacks %s, which the API server prunes from every status write). %s. "+
		"To upgrade the CRD: kubectl apply --server-side -f charts/exporterset/crds/",
		upstreamCRDPhrase, strings.Join(missing, ", "), strings.Join(fates, "; "))
}
