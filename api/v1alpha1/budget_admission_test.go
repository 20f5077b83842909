package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

const minimalBudget = `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: CapacityBudget
metadata: {name: lab}
spec:
  selector: {matchLabels: {budget: lab}}
  limits: {instances: 4}
`

// The minimal budget's spec lines, which the cases replace.
const (
	budgetSelector = "selector: {matchLabels: {budget: lab}}"
	budgetLimits   = "limits: {instances: 4}"
)

// budgetWith returns the minimal budget with one of its spec lines replaced.
func budgetWith(old, new string) string { return strings.Replace(minimalBudget, old, new, 1) }

// The CEL rules' messages, as a person reads them.
const (
	emptySelector = "spec.selector must have matchLabels or matchExpressions: an empty selector would govern every ExporterSet of the namespace"
	negativeRes   = "spec.limits.resources must not be negative"
)

// thirteen lists 13 resources (YAML flow), one more than a budget may name.
func thirteen() string {
	var rs []string
	for i := range 13 {
		rs = append(rs, fmt.Sprintf("example.com/r%d: 1", i))
	}
	return strings.Join(rs, ", ")
}

func TestBudgetAdmissionRejects(t *testing.T) {
	cases := []rejection{
		{"empty selector", budgetWith(budgetSelector, "selector: {}"), emptySelector},
		{"empty matchLabels", budgetWith(budgetSelector, "selector: {matchLabels: {}}"), emptySelector},
		{"empty matchExpressions", budgetWith(budgetSelector, "selector: {matchExpressions: []}"), emptySelector},
		{"missing selector", budgetWith("  "+budgetSelector+"\n", ""), "spec.selector: Required value"},
		{"missing limits", budgetWith("  "+budgetLimits+"\n", ""), "spec.limits: Required value"},
		{"missing instances", budgetWith(budgetLimits, "limits: {resources: {cpu: 8}}"), "spec.limits.instances: Required value"},
		{"negative instances", budgetWith(budgetLimits, "limits: {instances: -1}"), "spec.limits.instances in body should be greater than or equal to 0"},
		{"negative quantity string", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: '-1'}}"), negativeRes},
		{"negative memory", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: 8, memory: -2Gi}}"), negativeRes},
		{"negative milli", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: -100m}}"), negativeRes},
		{"negative integer", budgetWith(budgetLimits, "limits: {instances: 4, resources: {devices.kubevirt.io/kvm: -1}}"), negativeRes},
		{"more than 12 resources", budgetWith(budgetLimits, "limits: {instances: 4, resources: {"+thirteen()+"}}"), "spec.limits.resources: Too many"},
		{"not a quantity", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: lots}}"), "spec.limits.resources.cpu"},
	}
	checkRejected(t, cases)
}

func TestBudgetAdmissionAccepts(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"minimal", minimalBudget},
		{"zero instances", budgetWith(budgetLimits, "limits: {instances: 0}")},
		{"matchExpressions only", budgetWith(budgetSelector, "selector: {matchExpressions: [{key: board, operator: In, values: [a, b]}]}")},
		{"both selector forms", budgetWith(budgetSelector, "selector: {matchLabels: {budget: lab}, matchExpressions: [{key: board, operator: Exists}]}")},
		{"resources", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: 8, memory: 16Gi, devices.kubevirt.io/kvm: '4', ephemeral-storage: 1.5e3}}")},
		{"zero and milli resources", budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: 500m, memory: 0, devices.kubevirt.io/kvm: '0'}}")},
		{"empty resources", budgetWith(budgetLimits, "limits: {instances: 4, resources: {}}")},
	}
	ns := namespace(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := env.Client.Create(ctx, manifest(t, ns, tc.doc), client.DryRunAll); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}

// The budget round-trips through the Go types; its status is written only through the
// status subresource, and a status write from a stale copy conflicts (the reservations'
// precondition).
func TestBudgetRoundTripsAndStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	in := manifest(t, ns, budgetWith(budgetLimits, "limits: {instances: 4, resources: {cpu: 8, devices.kubevirt.io/kvm: '4'}}"))
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	var b vtv1alpha1.CapacityBudget
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &b); err != nil {
		t.Fatal(err)
	}
	kvm := b.Spec.Limits.Resources.Name("devices.kubevirt.io/kvm", resource.DecimalSI)
	if b.Spec.Limits.Instances != 4 || b.Spec.Selector.MatchLabels["budget"] != "lab" ||
		!b.Spec.Limits.Resources.Cpu().Equal(resource.MustParse("8")) || !kvm.Equal(resource.MustParse("4")) {
		t.Fatalf("decoded spec = %+v", b.Spec)
	}

	b.Status.Used.Instances = 3
	b.Status.Reservations = []vtv1alpha1.BudgetReservation{{Exporter: "pool-7", Set: "pool", Since: metav1.Now()}}
	b.Spec.Limits.Instances = 9 // a status write ignores spec
	if err := env.Client.Status().Update(ctx, &b); err != nil {
		t.Fatal(err)
	}
	stale := b.DeepCopy()
	b.Status.Reservations = append(b.Status.Reservations, vtv1alpha1.BudgetReservation{Exporter: "other-1", Set: "other", Since: metav1.Now()})
	if err := env.Client.Status().Update(ctx, &b); err != nil {
		t.Fatal(err)
	}
	stale.Status.Reservations = nil
	if err := env.Client.Status().Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("status write from a stale copy: got %v, want a conflict", err)
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &b); err != nil {
		t.Fatal(err)
	}
	if b.Spec.Limits.Instances != 4 || b.Status.Used.Instances != 3 || len(b.Status.Reservations) != 2 {
		t.Fatalf("after the status writes: limit %d (want 4), used %d (want 3), reservations %v (want 2)",
			b.Spec.Limits.Instances, b.Status.Used.Instances, b.Status.Reservations)
	}
}

// The print columns are served, and the table kubectl gets shows used and limit.
func TestBudgetPrintColumns(t *testing.T) {
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "capacitybudgets.virtualtarget.jumpstarter.dev"}, &crd); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, ","), "Used,Limit,Exhausted,Overcommitted,Age"; got != want {
		t.Errorf("print columns %s, want %s", got, want)
	}
	if len(crd.Spec.Names.ShortNames) != 1 || crd.Spec.Names.ShortNames[0] != "cb" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("short names %v, scope %s; want [cb], Namespaced", crd.Spec.Names.ShortNames, crd.Spec.Scope)
	}

	ns := namespace(t)
	in := manifest(t, ns, minimalBudget)
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	var b vtv1alpha1.CapacityBudget
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &b); err != nil {
		t.Fatal(err)
	}
	b.Status.Used.Instances = 3
	b.Status.Conditions = []metav1.Condition{
		{Type: vtv1alpha1.ConditionBudgetExhausted, Status: metav1.ConditionTrue, Reason: "SetsWaiting", Message: "b waits", LastTransitionTime: metav1.Now()},
		{Type: vtv1alpha1.ConditionBudgetOvercommitted, Status: metav1.ConditionFalse, Reason: "FloorsFit", LastTransitionTime: metav1.Now()},
	}
	if err := env.Client.Status().Update(ctx, &b); err != nil {
		t.Fatal(err)
	}

	table := budgetTable(t, ns, "lab")
	cells := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		cells[c.Name] = table.Rows[0].Cells[i]
	}
	// Cells are JSON values (numbers decode as float64): compare their text.
	for col, want := range map[string]string{"Name": "lab", "Used": "3", "Limit": "4", "Exhausted": "True", "Overcommitted": "False"} {
		if got := fmt.Sprint(cells[col]); got != want {
			t.Errorf("column %s = %q, want %q (row %v)", col, got, want, cells)
		}
	}
}

// budgetTable asks the API server for one budget as kubectl get does: as a Table.
func budgetTable(t *testing.T, ns, name string) *metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.GroupVersion = &vtv1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Namespace(ns).Resource("capacitybudgets").Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Param("includeObject", "None").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		t.Fatalf("not a Table: %v\n%s", err, raw)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
		t.Fatalf("table has %d rows, columns %v:\n%s", len(table.Rows), table.ColumnDefinitions, raw)
	}
	return table
}
