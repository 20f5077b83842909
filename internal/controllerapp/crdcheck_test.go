package controllerapp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func openAPIDoc(statusFields ...string) []byte {
	var props []string
	for _, f := range statusFields {
		props = append(props, fmt.Sprintf("%q: {\"type\": \"string\"}", f))
	}
	return []byte(`{"components": {"schemas": {
	  "dev.jumpstarter.virtualtarget.v1alpha1.VirtualTargetClass": {"x-kubernetes-group-version-kind": [{"group": "virtualtarget.jumpstarter.dev", "version": "v1alpha1", "kind": "VirtualTargetClass"}]},
	  "dev.jumpstarter.virtualtarget.v1alpha1.ExporterSet": {
	    "x-kubernetes-group-version-kind": [{"group": "virtualtarget.jumpstarter.dev", "version": "v1alpha1", "kind": "ExporterSet"}],
	    "properties": {"status": {"properties": {` + strings.Join(props, ",") + `}}}}}}}`)
}

// Our CRD's schema has every field; upstream's lacks four, and the note names each with what
// becomes of it, and how to upgrade.
func TestMissingStatusFields(t *testing.T) {
	ours := []string{"replicas", "surplusSince", "instanceSequence", "observedGeneration", "failingReplicas"}
	if got, err := missingStatusFields(openAPIDoc(ours...)); err != nil || len(got) != 0 {
		t.Fatalf("our schema: missing %v, %v", got, err)
	}
	got, err := missingStatusFields(openAPIDoc("replicas", "readyReplicas"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"surplusSince", "instanceSequence", "observedGeneration", "failingReplicas"}; !slices.Equal(got, want) {
		t.Fatalf("upstream's schema: missing %v, want %v", got, want)
	}
	note := upstreamCRDNote(got)
	for _, want := range []string{upstreamCRDPhrase, "cooldown clock is kept in memory", "instance name sequence is kept in memory", "kubectl apply --server-side -f charts/exporterset/crds/"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q: %s", want, note)
		}
	}
	if _, err := missingStatusFields([]byte(`{"components": {"schemas": {}}}`)); err == nil {
		t.Fatal("no ExporterSet schema, yet no error")
	}
}
