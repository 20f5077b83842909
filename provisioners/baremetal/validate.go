package baremetal

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// parametersPath roots every parameter error, as the Provisioner contract asks.
var parametersPath = field.NewPath("parameters")

// Keys of each parameter object, sorted.
var (
	topKeys      = []string{"credentialsSecretRef", "exporter", "hosts", "root", "runtime", "user"}
	hostKeys     = []string{"address", "arch", "name", "port", "slots"}
	runtimeKeys  = []string{"binary", "extraArgs", "kvm"}
	exporterKeys = []string{"command"}
	secretKeys   = []string{"name"}
)

// keyHints map keys people write by habit to the parameter they mean.
var keyHints = map[string]map[string]string{
	"":      {"hostname": "hosts", "sshUser": "user", "username": "user", "insecure": "(no such option: host keys are always verified)"},
	"hosts": {"host": "address", "ip": "address", "capacity": "slots", "architecture": "arch"},
}

// Validate checks raw parameters and returns nil or a provisioner Invalid error carrying the
// field errors, as provisioner.Provisioner.Validate must.
func Validate(raw []byte) error {
	_, errs := ParseParameters(raw)
	return provisioner.InvalidFields(errs)
}

// ParseParameters decodes the merged parameters strictly and applies the defaults. It returns
// nil parameters whenever there is an error, so nothing is started from half-checked input.
// An explicit null counts as unset.
func ParseParameters(raw []byte) (*Parameters, field.ErrorList) {
	top, ferr := fieldcheck.DecodeObject(parametersPath, raw)
	if ferr != nil {
		return nil, field.ErrorList{ferr}
	}
	errs := fieldcheck.UnknownKeys(parametersPath, "", top, topKeys, keyHints[""])
	p := &Parameters{User: DefaultUser, Root: DefaultRoot, Exporter: ExporterSpec{Command: DefaultExporterCommand}}

	errs = append(errs, parseHosts(top, p)...)
	errs = append(errs, parseRuntime(top, p)...)
	if v, ok := fieldcheck.Present(top, "exporter"); ok {
		pth := parametersPath.Child("exporter")
		m, ferr := fieldcheck.Object(pth, v)
		if ferr != nil {
			errs = append(errs, ferr)
		} else {
			errs = append(errs, fieldcheck.UnknownKeys(pth, "exporter", m, exporterKeys, nil)...)
			if c, ok := fieldcheck.Present(m, "command"); ok {
				cmd, cerrs := stringList(pth.Child("command"), c, false)
				if cerrs == nil && len(cmd) == 0 {
					cerrs = field.ErrorList{field.Required(pth.Child("command"), "the exporter's argv on the host, e.g. [\"jmp\", \"run\", \"--exporter-config\"]")}
				}
				errs = append(errs, cerrs...)
				p.Exporter.Command = cmd
			}
		}
	}
	if v, ok := fieldcheck.Present(top, "user"); ok {
		pth := parametersPath.Child("user")
		p.User, ferr = fieldcheck.String(pth, v)
		if ferr == nil && !validUser(p.User) {
			ferr = field.Invalid(pth, p.User, "must be a user name: letters, digits, '_', '-' and '.', not starting with '-'")
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(top, "root"); ok {
		pth := parametersPath.Child("root")
		p.Root, ferr = fieldcheck.String(pth, v)
		if ferr == nil {
			ferr = rootErr(pth, p.Root)
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(top, "credentialsSecretRef"); ok {
		pth := parametersPath.Child("credentialsSecretRef")
		m, ferr := fieldcheck.Object(pth, v)
		if ferr != nil {
			errs = append(errs, ferr)
		} else {
			errs = append(errs, fieldcheck.UnknownKeys(pth, "credentialsSecretRef", m, secretKeys, nil)...)
			ref := &SecretRef{}
			n, ok := fieldcheck.Present(m, "name")
			if !ok {
				errs = append(errs, field.Required(pth.Child("name"), "the Secret holding \"ssh-privatekey\" and \"known_hosts\""))
			} else if ref.Name, ferr = fieldcheck.String(pth.Child("name"), n); ferr != nil {
				errs = append(errs, ferr)
			} else {
				errs = fieldcheck.AppendErr(errs, msgsErr(pth.Child("name"), n, validation.IsDNS1123Subdomain(ref.Name)))
			}
			p.CredentialsSecretRef = ref
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// parseHosts reads hosts: a non-empty list with unique names and unique address:port pairs.
func parseHosts(top map[string]any, p *Parameters) field.ErrorList {
	pth := parametersPath.Child("hosts")
	v, ok := fieldcheck.Present(top, "hosts")
	if !ok {
		return field.ErrorList{field.Required(pth, "at least one lab host, e.g. [{\"name\": \"lab1\", \"address\": \"10.0.0.5\", \"arch\": \"x86_64\", \"slots\": 4}]")}
	}
	list, isList := v.([]any)
	if !isList {
		return field.ErrorList{field.TypeInvalid(pth, v, "must be a list of hosts")}
	}
	if len(list) == 0 {
		return field.ErrorList{field.Required(pth, "at least one lab host")}
	}
	var errs field.ErrorList
	names := map[string]int{}
	endpoints := map[string]int{}
	for i, item := range list {
		hp := pth.Index(i)
		m, ferr := fieldcheck.Object(hp, item)
		if ferr == nil && m == nil {
			ferr = field.Required(hp, "a host object")
		}
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		h, herrs := parseHost(hp, m)
		errs = append(errs, herrs...)
		if h.Name != "" {
			if j, dup := names[h.Name]; dup {
				errs = append(errs, field.Duplicate(hp.Child("name"), fmt.Sprintf("%s (also hosts[%d])", h.Name, j)))
			} else {
				names[h.Name] = i
			}
		}
		if h.Address != "" {
			ep := h.Address + ":" + strconv.Itoa(h.Port)
			if j, dup := endpoints[ep]; dup {
				errs = append(errs, field.Duplicate(hp.Child("address"), fmt.Sprintf("%s (also hosts[%d]): one host listed twice would get twice its slots", ep, j)))
			} else {
				endpoints[ep] = i
			}
		}
		p.Hosts = append(p.Hosts, h)
	}
	return errs
}

// parseHost reads one hosts[i] object.
func parseHost(hp *field.Path, m map[string]any) (Host, field.ErrorList) {
	errs := fieldcheck.UnknownKeys(hp, "hosts", m, hostKeys, keyHints["hosts"])
	h := Host{Port: DefaultPort}
	if v, ok := fieldcheck.Present(m, "name"); ok {
		s, ferr := fieldcheck.String(hp.Child("name"), v)
		if ferr == nil {
			ferr = msgsErr(hp.Child("name"), v, validation.IsDNS1123Label(s))
		}
		if ferr == nil {
			h.Name = s
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	} else {
		errs = append(errs, field.Required(hp.Child("name"), "a DNS label naming the host in status and errors"))
	}
	if v, ok := fieldcheck.Present(m, "address"); ok {
		s, ferr := fieldcheck.String(hp.Child("address"), v)
		if ferr == nil && (s == "" || strings.ContainsAny(s, " \t\r\n\x00/@[]") || strings.HasPrefix(s, "-") ||
			strings.Contains(s, ":") && net.ParseIP(s) == nil) {
			// A colon is only valid in an IPv6 address; "host:22" is a port in the wrong place.
			ferr = field.Invalid(hp.Child("address"), s, "must be a host name or an IP address (the port goes in \"port\")")
		}
		if ferr == nil {
			h.Address = s
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	} else {
		errs = append(errs, field.Required(hp.Child("address"), "the host name or IP address to reach it by SSH"))
	}
	if v, ok := fieldcheck.Present(m, "port"); ok {
		n, ferr := intValue(hp.Child("port"), v, 1, 65535)
		h.Port = int(n)
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(m, "arch"); ok {
		s, ferr := fieldcheck.String(hp.Child("arch"), v)
		if _, known := archBinaries[s]; ferr == nil && !known {
			ferr = field.NotSupported(hp.Child("arch"), s, slices.Sorted(maps.Keys(archBinaries)))
		}
		h.Arch = s
		errs = fieldcheck.AppendErr(errs, ferr)
	} else {
		errs = append(errs, field.Required(hp.Child("arch"), "the architecture QEMU emulates there: "+fieldcheck.QuoteAll(slices.Sorted(maps.Keys(archBinaries)))))
	}
	if v, ok := fieldcheck.Present(m, "slots"); ok {
		n, ferr := intValue(hp.Child("slots"), v, 1, maxSlots)
		h.Slots = int(n)
		errs = fieldcheck.AppendErr(errs, ferr)
	} else {
		errs = append(errs, field.Required(hp.Child("slots"), "how many instances the host runs at most"))
	}
	return h, errs
}

// parseRuntime reads runtime.
func parseRuntime(top map[string]any, p *Parameters) field.ErrorList {
	pth := parametersPath.Child("runtime")
	m, ferr := fieldcheck.Object(pth, top["runtime"])
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	errs := fieldcheck.UnknownKeys(pth, "runtime", m, runtimeKeys, nil)
	if v, ok := fieldcheck.Present(m, "binary"); ok {
		s, ferr := fieldcheck.String(pth.Child("binary"), v)
		if ferr == nil && (s == "" || strings.ContainsAny(s, "\x00\n") || strings.HasPrefix(s, "-")) {
			ferr = field.Invalid(pth.Child("binary"), s, "must be a program name or path")
		}
		p.Runtime.Binary = s
		errs = fieldcheck.AppendErr(errs, ferr)
	}
	if v, ok := fieldcheck.Present(m, "kvm"); ok {
		b, isBool := v.(bool)
		if !isBool {
			errs = append(errs, field.TypeInvalid(pth.Child("kvm"), v, "must be true or false"))
		}
		p.Runtime.KVM = b
	}
	if v, ok := fieldcheck.Present(m, "extraArgs"); ok {
		args, aerrs := stringList(pth.Child("extraArgs"), v, true)
		p.Runtime.ExtraArgs = args
		errs = append(errs, aerrs...)
	}
	return errs
}

// stringList reads a list of strings. No element may hold a NUL byte, which no argv can carry;
// empty elements are refused unless allowEmpty (QEMU takes "" as a value, a program name not).
func stringList(pth *field.Path, v any, allowEmpty bool) ([]string, field.ErrorList) {
	list, ok := v.([]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(pth, v, "must be a list of strings")}
	}
	var errs field.ErrorList
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ferr := fieldcheck.String(pth.Index(i), item)
		if ferr == nil && strings.ContainsRune(s, 0) {
			ferr = field.Invalid(pth.Index(i), s, "must not contain a NUL byte")
		}
		if ferr == nil && s == "" && !allowEmpty {
			ferr = field.Invalid(pth.Index(i), s, "must not be empty")
		}
		errs = fieldcheck.AppendErr(errs, ferr)
		out = append(out, s)
	}
	return out, errs
}

// rootErr checks root: absolute and clean, so that instance directories are exactly
// root/ns_set/name and Stop's rm -rf can never reach above root; "/" itself is refused for
// the same reason.
func rootErr(pth *field.Path, s string) *field.Error {
	switch {
	case !path.IsAbs(s):
		return field.Invalid(pth, s, "must be an absolute path")
	case path.Clean(s) != s:
		return field.Invalid(pth, s, fmt.Sprintf("must be a clean path (%q)", path.Clean(s)))
	case s == "/":
		return field.Invalid(pth, s, "must not be the file system root")
	case strings.ContainsAny(s, "\x00\n"):
		return field.Invalid(pth, s, "must not contain NUL or newline")
	}
	return nil
}

// validUser accepts the portable user names of POSIX (plus the '$' Samba machine accounts
// do not need here): what useradd takes by default.
func validUser(s string) bool {
	if s == "" || len(s) > 32 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// intValue reads an integer in [lo, hi].
func intValue(pth *field.Path, v any, lo, hi int64) (int64, *field.Error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, field.TypeInvalid(pth, v, "must be an integer")
	}
	n, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil {
		return 0, field.Invalid(pth, v, "must be a whole number")
	}
	if n < lo {
		return 0, field.Invalid(pth, v, fmt.Sprintf("must be at least %d", lo))
	}
	if n > hi {
		return 0, field.Invalid(pth, v, fmt.Sprintf("must be at most %d", hi))
	}
	return n, nil
}

// msgsErr turns the messages of an apimachinery validation helper into one field error.
func msgsErr(pth *field.Path, v any, msgs []string) *field.Error {
	if len(msgs) == 0 {
		return nil
	}
	return field.Invalid(pth, v, strings.Join(msgs, "; "))
}
