package qemu

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"

	"github.com/exporterset/exporterset/merge"
)

var (
	driversPath     = field.NewPath("spec", "template", "spec", "drivers")
	credentialsPath = field.NewPath("spec", "credentialsSecretRef", "name")
	limitsPath      = field.NewPath("spec", "scheduling", "resources", "limits")
)

// plan is everything Validate checked and RenderPod and EnrichDrivers build from: one
// decision, made once, so the three methods can never disagree.
type plan struct {
	params *parameters
	// qemu is the index of the set's Qemu driver entry, or -1; qemuConfig is its config
	// decoded (numbers exact), empty when it has none.
	qemu       int
	qemuConfig map[string]any
	// arch is the guest arch QEMU runs: the driver config's "arch" when it sets one (explicit
	// config wins), else the parameter; "" for an arch this provisioner does not know.
	arch string
	// kvm is the device-plugin resource that gives the runtime /dev/kvm, "" without one.
	kvm corev1.ResourceName
}

// newPlan validates req. Its error is CodeInvalid with field errors for bad input, or
// CodeInternal for a request the reconciler should never send.
func newPlan(req *provisioner.Request) (*plan, error) {
	if req == nil {
		return nil, provisioner.Errorf("qemu: nil request")
	}
	params, errs := parseParameters(req.Parameters)
	pl := &plan{params: params, qemu: -1}
	errs = append(errs, pl.readDrivers(req.Set)...)
	errs = append(errs, checkCredentials(req.Class)...)
	if len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	if !explicit(pl.qemuConfig, "arch") {
		pl.arch = params.arch
	}
	pl.kvm = kvmResource(scheduling(req.Class).Resources)
	if errs := pl.checkAgainstClass(req.Class); len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	return pl, nil
}

// readDrivers checks every driver entry of a type the provisioner knows against that
// driver's fields, every type that is a typo of a known one and every ref, and keeps the Qemu
// entry and its decoded config for rendering, without touching the set.
func (pl *plan) readDrivers(set *vtv1alpha1.ExporterSet) field.ErrorList {
	if set == nil {
		return nil
	}
	drivers := set.Spec.Template.Spec.Drivers
	errs := checkTypes(drivers)
	configs := make([]map[string]any, len(drivers))
	for i, d := range drivers {
		spec := lookupDriver(d.Type)
		if d.Ref != "" || spec == nil {
			continue
		}
		path := driversPath.Index(i)
		if d.Type == QemuDriverType && pl.qemu >= 0 {
			// Every Qemu driver keeps its QMP, serial and VNC sockets at the same fixed
			// paths in /shared: two in one Pod would fight over them.
			errs = append(errs, field.Forbidden(path.Child("type"), fmt.Sprintf(
				"only one %s driver per instance: its sockets live at fixed paths in %s (%s is %q)",
				QemuDriverType, SharedDir, driversPath.Index(pl.qemu), drivers[pl.qemu].Name)))
			continue
		}
		if d.Type == QemuDriverType {
			pl.qemu = i
		}
		cfg, ferr := decodeConfig(path.Child("config"), d)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		configs[i] = cfg
		// Checked before anything renders: EnrichDrivers would otherwise add "mem" beside a
		// misspelt "memory", and the exporter would refuse the whole config at start.
		errs = append(errs, checkObject(path.Child("config"), cfg, spec.config)...)
		if i != pl.qemu {
			continue
		}
		pl.qemuConfig = cfg
		if a, ok := cfg["arch"].(string); ok {
			if _, known := arches[a]; known {
				pl.arch = a
			}
		}
	}
	return append(errs, checkRefs(drivers, configs)...)
}

// decodeConfig decodes a driver's config; absent or null is an empty object.
func decodeConfig(path *field.Path, d vtv1alpha1.DriverSpec) (map[string]any, *field.Error) {
	cfg := map[string]any{}
	if d.Config == nil || len(d.Config.Raw) == 0 {
		return cfg, nil
	}
	v, err := fieldcheck.DecodeJSON(d.Config.Raw)
	if err != nil {
		return nil, field.Invalid(path, fieldcheck.Abbreviate(d.Config.Raw), "is not valid JSON: "+err.Error())
	}
	if v == nil {
		return cfg, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, field.TypeInvalid(path, merge.KindOf(v), "must be a JSON object")
	}
	return m, nil
}

// checkCredentials checks the Secret name the containers' envFrom will name.
func checkCredentials(class *vtv1alpha1.VirtualTargetClass) field.ErrorList {
	if class == nil || class.Spec.CredentialsSecretRef == nil {
		return nil
	}
	name := class.Spec.CredentialsSecretRef.Name
	if name == "" {
		return field.ErrorList{field.Required(credentialsPath, "names the Secret whose keys become the containers' environment")}
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(credentialsPath, name, strings.Join(msgs, "; "))}
	}
	return nil
}

// checkAgainstClass catches parameters that the class's own limits make fail at run time.
func (pl *plan) checkAgainstClass(class *vtv1alpha1.VirtualTargetClass) field.ErrorList {
	var errs field.ErrorList
	p := pl.params
	if pl.arch != "" && pl.arch != p.arch && !slices.Contains(arches[pl.arch].firmware, p.firmware) {
		f := field.NotSupported(parametersPath.Child("firmware"), p.firmware, arches[pl.arch].firmware)
		f.Detail += fmt.Sprintf(" (for arch %q, set by %s)", pl.arch, driversPath.Index(pl.qemu).Child("config", "arch"))
		errs = append(errs, f)
	}
	limits := corev1.ResourceList{}
	if r := scheduling(class).Resources; r != nil && r.Limits != nil {
		limits = r.Limits
	}
	// Only when the parameter is what QEMU gets: an explicit driver "mem" wins.
	if pl.qemu >= 0 && !explicit(pl.qemuConfig, "mem") {
		if limit, ok := limits[corev1.ResourceMemory]; ok && limit.Cmp(*resource.NewQuantity(p.memory, resource.BinarySI)) < 0 {
			errs = append(errs, field.Invalid(parametersPath.Child("resources", "memory"), bytesString(p.memory), fmt.Sprintf(
				"is more than the runtime container's memory limit %s (%s): the guest would be OOM-killed",
				limit.String(), limitsPath.Key(string(corev1.ResourceMemory)))))
		}
	}
	if p.storageClassName == "" {
		vol := p.volumeSize()
		if limit, ok := limits[corev1.ResourceEphemeralStorage]; ok && limit.Cmp(vol) < 0 {
			errs = append(errs, field.Invalid(parametersPath.Child("resources", "storage"), bytesString(p.storage), fmt.Sprintf(
				"needs a %s emptyDir (with storage.fsOverhead), more than the runtime container's ephemeral-storage limit %s (%s)",
				vol.String(), limit.String(), limitsPath.Key(string(corev1.ResourceEphemeralStorage)))))
		}
	}
	return errs
}

// bytesString writes a byte count as a canonical binary quantity ("2Gi").
func bytesString(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }

// scheduling returns the class's scheduling, never nil.
func scheduling(class *vtv1alpha1.VirtualTargetClass) *vtv1alpha1.Scheduling {
	if class == nil || class.Spec.Scheduling == nil {
		return &vtv1alpha1.Scheduling{}
	}
	return class.Spec.Scheduling
}

// kvmResource returns the device-plugin resource that hands the container /dev/kvm: any
// positive resource named ".../kvm" (devices.kubevirt.io/kvm, or the generic device plugins'
// squat.ai/kvm and smarter-devices/kvm), in limits, where extended resources must be.
func kvmResource(r *corev1.ResourceRequirements) corev1.ResourceName {
	if r == nil {
		return ""
	}
	var names []string
	for name, q := range r.Limits {
		if strings.HasSuffix(string(name), "/kvm") && q.Sign() > 0 {
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return corev1.ResourceName(names[0])
}

// accelerator says how QEMU will run the guest: "kvm" when the runtime gets /dev/kvm and
// the guest arch is the node's (KVM cannot run a foreign arch; the driver then picks TCG
// itself), else "tcg", software emulation.
func (pl *plan) accelerator(class *vtv1alpha1.VirtualTargetClass) string {
	if pl.kvm == "" || pl.arch == "" {
		return AcceleratorTCG
	}
	if nodeArch, ok := scheduling(class).NodeSelector[corev1.LabelArchStable]; ok && nodeArch != arches[pl.arch].nodeArch {
		return AcceleratorTCG
	}
	return AcceleratorKVM
}
