package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
)

// pool is one ExporterSet of the soak with its own VirtualTargetClass, so that a class
// deleted or edited by the walk affects one set.
type pool struct {
	set, class  string
	provisioner string
	recycle     vtv1alpha1.RecycleStrategy
	min, max    int32
	minAvail    int32
	cooldown    time.Duration
	// sidecar renders the fake's runtime as a native sidecar (class parameter
	// {"sidecar": true}), so a crashing runtime crash-loops (CrashLoopBackOff) instead of
	// terminating for good.
	sidecar bool
	// kvm makes the class's runtime request a KVM device, so removing the device from the
	// node leaves new Pods Unschedulable.
	kvm bool
	// hooks are the lease hooks the walk gave the class (parameters.hooks), nil for none
	// (hook_actions.go); classParameters renders them, so other class edits keep them.
	hooks map[string]any
	// budgeted sets carry the label the soak's CapacityBudget selects (budget.go).
	budgeted bool
	// shape, when set, is kept through the walk: its sizing and binding mode are not edited
	// (ondemand_actions.go).
	shape string
	// boards is how many physical boards serve the set's Leases beside its instances,
	// named by its hardware-selector annotation (boards.go).
	boards int
}

// Set shapes the walk keeps (issue 38): the users of both are refused by the Jumpstarter
// core whenever the set holds no enabled Exporter.
const (
	// shapeOnDemand: Immediate binding, no floor, no warm buffer, maxReplicas >= 2: the set
	// provisions for its users only.
	shapeOnDemand = "on-demand"
	// shapeCeilingOne: maxReplicas 1, minAvailableReplicas 1, ExitAndReplace: one instance,
	// recycled after every lease, with leases taken back to back.
	shapeCeilingOne = "ceiling-one"
)

// startupDeadline is the soak classes' startupDeadline: short, so that an instance stuck
// behind an image pull failure is replaced (StartupDeadlineExceeded) within a walk, yet well
// above the slowest normal start (the slow-start action's delays included).
const startupDeadline = 20 * time.Second

// exporterImage and runtimeImage are a pool's own images (its class's spec.images), so that
// an image fault hits one set. The plugin's target image is its class's parameters.image.
func exporterImage(p *pool) string { return "quay.io/jumpstarter-dev/jumpstarter:soak-" + p.set }
func runtimeImage(p *pool) string  { return "registry.example/soak-runtime-" + p.set + ":1" }

// pools are small and their cooldowns short, so the walk exercises scale-down and the
// ceiling often; two keep a shape whose users the Jumpstarter core refuses when the set
// holds no enabled Exporter (on-demand, and a ceiling of 1); one runs on the real plugin
// when it was built.
func pools(withPlugin bool) []pool {
	out := []pool{
		{set: "alpha", class: "fake-a", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: 1, max: 4, minAvail: 1, cooldown: time.Second, sidecar: true, kvm: true, budgeted: true},
		{set: "beta", class: "fake-b", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleInPlaceReuse, min: 0, max: 3, minAvail: 2, cooldown: 0, budgeted: true, boards: 2},
		// Targets outside the Pod: the external fake's remote resources (external_actions.go).
		{set: "delta", class: "fake-ext", provisioner: fakeprov.ExternalName, recycle: vtv1alpha1.RecycleExitAndReplace, min: 1, max: 3, minAvail: 1, cooldown: time.Second, budgeted: true},
		// The shapes the walk keeps, outside the budget (its sizing is tuned for the three
		// above): an on-demand set and a set at a ceiling of 1.
		{set: "epsilon", class: "fake-e", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: 0, max: 3, minAvail: 0, cooldown: time.Second, shape: shapeOnDemand},
		{set: "zeta", class: "fake-z", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: 0, max: 1, minAvail: 1, cooldown: time.Second, shape: shapeCeilingOne},
	}
	if withPlugin {
		out = append(out, pool{set: "gamma", class: "plugin", provisioner: PluginProvisioner, recycle: vtv1alpha1.RecycleExitAndReplace, min: 1, max: 3, minAvail: 1, cooldown: 2 * time.Second})
	}
	return out
}

// world is everything one soak run works on.
type world struct {
	ns      string
	c       client.Client // direct, uncached: the walk's and the final check's view
	sim     *jumpsim.Simulator
	fake    *fakeprov.Fake
	ext     *fakeprov.External // serves the external pool, over fake
	plugins *host.Host         // nil without the plugin
	ctrl    *controller
	checker *Checker
	faults  *Faults
	history *History
	pools   []pool
}

func (w *world) poolOf(set string) *pool {
	for i := range w.pools {
		if w.pools[i].set == set {
			return &w.pools[i]
		}
	}
	return nil
}

func (w *world) poolOfClass(class string) *pool {
	for i := range w.pools {
		if w.pools[i].class == class {
			return &w.pools[i]
		}
	}
	return nil
}

// classParameters are a class's parameters at revision rev: the plugin needs a target image,
// the fake takes anything.
func classParameters(p *pool, rev int) *apiextensionsv1.JSON {
	var v map[string]any
	if p.provisioner == PluginProvisioner {
		v = map[string]any{"image": fmt.Sprintf("registry.example/soak-target:%d", rev)}
	} else {
		v = map[string]any{"rev": rev}
		if p.sidecar {
			v["sidecar"] = true
		}
	}
	if p.hooks != nil {
		v["hooks"] = p.hooks
	}
	b, _ := json.Marshal(v)
	return &apiextensionsv1.JSON{Raw: b}
}

func newClass(ns string, p *pool) *vtv1alpha1.VirtualTargetClass {
	c := &vtv1alpha1.VirtualTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: p.class, Namespace: ns},
		Spec: vtv1alpha1.VirtualTargetClassSpec{
			Provisioner: p.provisioner, Parameters: classParameters(p, 0),
			Images: &vtv1alpha1.Images{
				Exporter: &vtv1alpha1.ImageSpec{Image: exporterImage(p), ImagePullPolicy: corev1.PullIfNotPresent},
				Runtime:  &vtv1alpha1.ImageSpec{Image: runtimeImage(p), ImagePullPolicy: corev1.PullIfNotPresent},
			},
			StartupDeadline: &metav1.Duration{Duration: startupDeadline},
		},
	}
	if p.shape == shapeOnDemand {
		c.Spec.BindingMode = vtv1alpha1.BindingImmediate // the default, said: the shape needs it
	}
	if p.kvm {
		c.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{jumpsim.KVMResource: resource.MustParse("1")},
			Limits:   corev1.ResourceList{jumpsim.KVMResource: resource.MustParse("1")},
		}}
	}
	return c
}

func newSet(ns string, p *pool) *vtv1alpha1.ExporterSet {
	var setLabels map[string]string
	if p.budgeted {
		setLabels = map[string]string{budgetLabel: budgetName}
	}
	var annotations map[string]string
	if p.boards > 0 {
		annotations = map[string]string{exporterset.AnnotationHardwareSelector: boardSelector(p.set)}
	}
	return &vtv1alpha1.ExporterSet{
		ObjectMeta: metav1.ObjectMeta{Name: p.set, Namespace: ns, Labels: setLabels, Annotations: annotations},
		Spec: vtv1alpha1.ExporterSetSpec{
			VirtualTargetClassName: p.class,
			Selector:               metav1.LabelSelector{MatchLabels: map[string]string{"board": p.set}},
			Template: vtv1alpha1.ExporterTemplate{
				Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: map[string]string{"board": p.set}},
				Spec:     vtv1alpha1.ExporterTemplateSpec{Drivers: []vtv1alpha1.DriverSpec{{Name: "power", Type: "jumpstarter_driver_power.driver.MockPower"}}},
			},
			MinReplicas: p.min, MaxReplicas: ptr.To(p.max), MinAvailableReplicas: p.minAvail,
			ScaleDownCooldown: &metav1.Duration{Duration: p.cooldown},
			RecycleStrategy:   p.recycle,
		},
	}
}

// populate creates the namespace's CA bundle, classes and sets.
func (w *world) populate(ctx context.Context) error {
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: w.ns},
		Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\nsoak\n-----END CERTIFICATE-----\n"}}
	if err := w.c.Create(ctx, ca); err != nil {
		return err
	}
	for i := range w.pools {
		p := &w.pools[i]
		if err := w.c.Create(ctx, newClass(w.ns, p)); err != nil {
			return fmt.Errorf("creating class %s: %w", p.class, err)
		}
		if err := w.c.Create(ctx, newSet(w.ns, p)); err != nil {
			return fmt.Errorf("creating set %s: %w", p.set, err)
		}
		if err := w.plugBoards(ctx, p); err != nil {
			return err
		}
	}
	if err := w.c.Create(ctx, newBudget(w.ns, budgetLimits[0])); err != nil {
		return fmt.Errorf("creating CapacityBudget %s: %w", budgetName, err)
	}
	return nil
}
