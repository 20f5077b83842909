package kubevirt

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// parametersPath roots every parameter error, as the Provisioner contract asks.
var parametersPath = field.NewPath("parameters")

// Keys of each parameter object, sorted.
var (
	topKeys        = []string{"cloudInit", "containerDisk", "dataVolume", "forwardPorts", "kubeconfigKey", "namespace", "resources", "ssh"}
	resourcesKeys  = []string{"cpu", "memory"}
	dataVolumeKeys = []string{"http", "registry", "storage", "storageClassName"}
	sshKeys        = []string{"enabled", "port"}
)

// forwardName is what a forwardPorts key must look like: it names a driver of the exporter
// config, so it is kept to a DNS label that Python and YAML take without quoting.
var forwardName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// parseParameters decodes the merged parameters strictly and applies the defaults. It returns
// nil parameters whenever there is an error, so nothing is created from half-checked input.
// An explicit null counts as unset.
func parseParameters(raw []byte) (*parameters, field.ErrorList) {
	top, ferr := fieldcheck.DecodeObject(parametersPath, raw)
	if ferr != nil {
		return nil, field.ErrorList{ferr}
	}
	errs := fieldcheck.UnknownKeys(parametersPath, "", top, topKeys, keyHints[""])
	p := &parameters{kubeconfigKey: defaultKubeconfigKey, namespace: defaultNamespace, cores: defaultCores}
	p.memory = resource.MustParse(defaultMemory)

	if v, ok := fieldcheck.Present(top, "kubeconfigKey"); ok {
		path := parametersPath.Child("kubeconfigKey")
		p.kubeconfigKey, ferr = fieldcheck.String(path, v)
		if ferr == nil {
			ferr = msgsErr(path, v, validation.IsConfigMapKey(p.kubeconfigKey))
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(top, "namespace"); ok {
		path := parametersPath.Child("namespace")
		p.namespace, ferr = fieldcheck.String(path, v)
		if ferr == nil {
			ferr = msgsErr(path, v, validation.IsDNS1123Label(p.namespace))
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	errs = append(errs, parseDisk(top, p)...)
	errs = append(errs, parseResources(top, p)...)
	if v, ok := fieldcheck.Present(top, "cloudInit"); ok {
		p.cloudInit, ferr = fieldcheck.String(parametersPath.Child("cloudInit"), v)
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	errs = append(errs, parseForwards(top, p)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// parseDisk reads containerDisk or dataVolume: exactly one of them.
func parseDisk(top map[string]any, p *parameters) field.ErrorList {
	var errs field.ErrorList
	cd, hasCD := fieldcheck.Present(top, "containerDisk")
	dv, hasDV := fieldcheck.Present(top, "dataVolume")
	switch {
	case !hasCD && !hasDV:
		return field.ErrorList{field.Required(parametersPath.Child("containerDisk"), `the VM needs a disk: set "containerDisk" (an image) or "dataVolume"`)}
	case hasCD && hasDV:
		return field.ErrorList{field.Forbidden(parametersPath.Child("dataVolume"), `set either "containerDisk" or "dataVolume", not both`)}
	case hasCD:
		path := parametersPath.Child("containerDisk")
		s, ferr := fieldcheck.String(path, cd)
		if ferr == nil && (s == "" || strings.ContainsAny(s, " \t\n")) {
			ferr = field.Invalid(path, s, "must be a container image reference")
		}
		p.disk.containerDisk = s
		return fieldcheck.AppendErr(nil, ferr)
	}
	path := parametersPath.Child("dataVolume")
	m, ferr := fieldcheck.Object(path, dv)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	errs = append(errs, fieldcheck.UnknownKeys(path, "dataVolume", m, dataVolumeKeys, keyHints["dataVolume"])...)
	d := &dataVolumeParams{}
	httpV, hasHTTP := fieldcheck.Present(m, "http")
	regV, hasReg := fieldcheck.Present(m, "registry")
	switch {
	case hasHTTP && hasReg:
		errs = append(errs, field.Forbidden(path.Child("registry"), `set either "http" or "registry", not both`))
	case hasHTTP:
		d.httpURL, ferr = urlValue(path.Child("http"), httpV, "http", "https")
		errs = fieldcheck.AppendErr(errs, ferr)
	case hasReg:
		// CDI's registry source takes docker:// (a registry) or oci-archive:// (a file).
		d.registryURL, ferr = urlValue(path.Child("registry"), regV, "docker", "oci-archive")
		errs = fieldcheck.AppendErr(errs, ferr)
	default:
		errs = append(errs, field.Required(path.Child("http"), `the DataVolume needs a source: "http" (a URL) or "registry" (docker://...)`))
	}
	if v, ok := fieldcheck.Present(m, "storage"); ok {
		d.storage, ferr = quantity(path.Child("storage"), v)
		errs = fieldcheck.AppendErr(errs, ferr)
	} else {
		errs = append(errs, field.Required(path.Child("storage"), `the size of the disk's PVC, e.g. "20Gi"`))
	}
	if v, ok := fieldcheck.Present(m, "storageClassName"); ok {
		sp := path.Child("storageClassName")
		d.storageClassName, ferr = fieldcheck.String(sp, v)
		if ferr == nil {
			ferr = msgsErr(sp, v, validation.IsDNS1123Subdomain(d.storageClassName))
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	p.disk.dataVolume = d
	return errs
}

// parseResources reads resources.cpu (whole cores) and resources.memory (a quantity).
func parseResources(top map[string]any, p *parameters) field.ErrorList {
	path := parametersPath.Child("resources")
	m, ferr := fieldcheck.Object(path, top["resources"])
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	errs := fieldcheck.UnknownKeys(path, "resources", m, resourcesKeys, keyHints["resources"])
	if v, ok := fieldcheck.Present(m, "cpu"); ok {
		n, ferr := intValue(path.Child("cpu"), v, 1, maxCores, true)
		p.cores = uint32(n)
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(m, "memory"); ok {
		p.memory, ferr = quantity(path.Child("memory"), v)
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	return errs
}

// parseForwards reads ssh and forwardPorts into p.forwards, checking that no two forwards
// share a name or a local port.
func parseForwards(top map[string]any, p *parameters) field.ErrorList {
	sshPath := parametersPath.Child("ssh")
	ssh, ferr := fieldcheck.Object(sshPath, top["ssh"])
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	errs := fieldcheck.UnknownKeys(sshPath, "ssh", ssh, sshKeys, keyHints["ssh"])
	enabled, port := true, int64(defaultSSHPort)
	if v, ok := fieldcheck.Present(ssh, "enabled"); ok {
		b, isBool := v.(bool)
		if !isBool {
			errs = append(errs, field.TypeInvalid(sshPath.Child("enabled"), v, "must be true or false"))
		}
		enabled = b
	}
	if v, ok := fieldcheck.Present(ssh, "port"); ok {
		port, ferr = intValue(sshPath.Child("port"), v, 1, 65535, false)
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if enabled {
		p.forwards = append(p.forwards, forward{name: "ssh", guestPort: int32(port), localPort: localPortFor(int32(port))})
	}

	fwPath := parametersPath.Child("forwardPorts")
	fw, ferr := fieldcheck.Object(fwPath, top["forwardPorts"])
	if ferr != nil {
		return append(errs, ferr)
	}
	names := make([]string, 0, len(fw))
	for k := range fw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		path := fwPath.Key(name)
		if !forwardName.MatchString(name) || len(name) > 63 {
			errs = append(errs, field.Invalid(path, name, "a forward's name names its TcpNetwork driver: lowercase letters, digits and '-', at most 63"))
			continue
		}
		if name == "ssh" && enabled {
			errs = append(errs, field.Duplicate(path, `"ssh" is the ssh forward; set ssh.port instead`))
			continue
		}
		port, ferr := intValue(path, fw[name], 1, 65535, false)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		f := forward{name: name, guestPort: int32(port), localPort: localPortFor(int32(port))}
		for _, other := range p.forwards {
			if other.localPort == f.localPort {
				errs = append(errs, field.Invalid(path, port, fmt.Sprintf("listens on local port %d in the Pod, as %q does", f.localPort, other.name)))
			}
		}
		p.forwards = append(p.forwards, f)
	}
	return errs
}

// intValue reads an integer in [lo, hi]; with digits set a string of digits counts too (a
// CPU count may come as 2 or "2", as upstream's sample class writes quantities).
func intValue(path *field.Path, v any, lo, hi int64, digits bool) (int64, *field.Error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		if !digits {
			return 0, field.TypeInvalid(path, v, "must be an integer, not a string")
		}
		s = x
	default:
		return 0, field.TypeInvalid(path, v, "must be an integer")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, field.Invalid(path, v, "must be a whole number")
	}
	if n < lo || n > hi {
		return 0, field.Invalid(path, v, fmt.Sprintf("must be from %d to %d", lo, hi))
	}
	return n, nil
}

// quantity reads a positive Kubernetes quantity ("2Gi"), as KubeVirt's own spec takes it.
func quantity(path *field.Path, v any) (resource.Quantity, *field.Error) {
	s, ferr := fieldcheck.String(path, v)
	if ferr != nil {
		if n, ok := v.(json.Number); ok {
			s, ferr = n.String(), nil
		} else {
			return resource.Quantity{}, ferr
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, field.Invalid(path, v, `must be a Kubernetes quantity such as "2Gi"`)
	}
	if q.Sign() <= 0 {
		return q, field.Invalid(path, v, "must be greater than zero")
	}
	return q, nil
}

// urlValue reads an absolute URL with one of schemes.
func urlValue(path *field.Path, v any, schemes ...string) (string, *field.Error) {
	s, ferr := fieldcheck.String(path, v)
	if ferr != nil {
		return "", ferr
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" && u.Opaque == "" && u.Path == "" {
		return "", field.Invalid(path, s, "must be a URL")
	}
	for _, sc := range schemes {
		if u.Scheme == sc {
			return s, nil
		}
	}
	return "", field.Invalid(path, s, "must be a URL with scheme "+fieldcheck.QuoteAll(schemes))
}

// msgsErr turns the messages of an apimachinery validation helper into one field error.
func msgsErr(path *field.Path, v any, msgs []string) *field.Error {
	if len(msgs) == 0 {
		return nil
	}
	return field.Invalid(path, v, strings.Join(msgs, "; "))
}
