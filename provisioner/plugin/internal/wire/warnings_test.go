package wire_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/provisioner"
)

// warner is a provisioner with warnings (provisioner.WarningValidator).
type warner struct {
	provisioner.Funcs
	warnings []provisioner.Warning
	err      error
}

func (w warner) Warnings(context.Context, *provisioner.Request) ([]provisioner.Warning, error) {
	return w.warnings, w.err
}

func TestWarningsRoundTrip(t *testing.T) {
	want := []provisioner.Warning{{Field: "spec.template.spec.drivers[2].type", Message: "unknown"}, {Message: "no field"}}
	got, err := serve(t, warner{warnings: want}).Warnings(t.Context(), nil)
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	// A provisioner without warnings, and a server that predates the RPC, give none.
	if got, err := serve(t, provisioner.Funcs{}).Warnings(t.Context(), nil); got != nil || err != nil {
		t.Errorf("no WarningValidator: %+v, %v", got, err)
	}
	if got, err := inMemory(t, func(*grpc.Server) {}).Warnings(t.Context(), nil); got != nil || err != nil {
		t.Errorf("server without the RPC: %+v, %v", got, err)
	}
	// Its errors keep their code and fields, as Validate's do.
	_, err = serve(t, warner{err: provisioner.InvalidFields(field.ErrorList{field.Required(field.NewPath("parameters", "x"), "")})}).Warnings(t.Context(), nil)
	if !provisioner.IsInvalid(err) {
		t.Errorf("error: %v (%s), want invalid", err, provisioner.CodeOf(err))
	}
}
