package baremetal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Runner runs one argv on a host. *Client is the real one; tests may run argv locally through
// QuoteArgv and sh to exercise the scripts without SSH.
type Runner interface {
	// Run runs argv with stdin (nil for none) and returns its output; a non-zero exit is a
	// *CommandError.
	Run(ctx context.Context, argv []string, stdin []byte) (stdout, stderr []byte, err error)
}

// Files in an instance directory.
const (
	configFile = "config.yaml"
	metaFile   = "meta.json"
	// QMPSocket is QEMU's QMP socket, relative to the instance directory: QEMU and the
	// exporter both run there, and a relative path keeps clear of the 108-byte limit of unix
	// socket paths that root/ns_set/instance could pass.
	QMPSocket = "qmp.sock"
)

// InstanceRef identifies one instance: its Exporter's namespace, set, name and UID.
type InstanceRef struct {
	// Namespace and Set are the ExporterSet's namespace and name.
	Namespace, Set string
	// Name is the Exporter's name, which names the instance directory.
	Name string
	// UID is the Exporter's UID: a directory holding another UID is another instance.
	UID string
}

// validate checks the parts that become path components: DNS names, so no "/", "..", "_" in a
// namespace (which keeps the ns_set directory name unambiguous) or leading "-".
func (r InstanceRef) validate() error {
	var msgs []string
	for _, c := range []struct{ what, v string }{{"namespace", r.Namespace}, {"set", r.Set}, {"name", r.Name}} {
		check := validation.IsDNS1123Subdomain
		if c.what == "namespace" {
			check = validation.IsDNS1123Label
		}
		for _, m := range check(c.v) {
			msgs = append(msgs, fmt.Sprintf("%s %q: %s", c.what, c.v, m))
		}
	}
	if strings.ContainsAny(r.UID, "\x00\n") {
		msgs = append(msgs, "uid must not contain NUL or newline")
	}
	if len(msgs) > 0 {
		return errors.New("invalid instance reference: " + strings.Join(msgs, "; "))
	}
	return nil
}

// LaunchSpec is everything Create needs for one instance.
type LaunchSpec struct {
	InstanceRef
	// Binary is the QEMU binary (RuntimeSpec.BinaryFor the host's arch).
	Binary string
	// KVM selects -accel kvm, else -accel tcg.
	KVM bool
	// ExtraArgs follow the QEMU arguments this package sets.
	ExtraArgs []string
	// ExporterCommand is the exporter's argv; the config path is appended.
	ExporterCommand []string
	// Config is the exporter config (it holds the exporter's token: never log it).
	Config []byte
}

// LaunchSpec builds the LaunchSpec for an instance on host h from the parameters.
func (p *Parameters) LaunchSpec(h Host, ref InstanceRef, config []byte) LaunchSpec {
	return LaunchSpec{
		InstanceRef: ref, Binary: p.Runtime.BinaryFor(h.Arch), KVM: p.Runtime.KVM,
		ExtraArgs: p.Runtime.ExtraArgs, ExporterCommand: p.Exporter.Command, Config: config,
	}
}

// Meta is the metadata file of an instance, what Inventory reports.
type Meta struct {
	// Namespace and Set are the ExporterSet's namespace and name.
	Namespace string `json:"namespace"`
	Set       string `json:"set"`
	// Instance is the Exporter's name, UID its UID.
	Instance string `json:"instance"`
	UID      string `json:"uid"`
	// Created is when Create wrote the file (the controller's clock, UTC).
	Created time.Time `json:"created"`
	// Dir is where the file was found; it is not stored in the file.
	Dir string `json:"-"`
}

// Phase is the state of an instance on its host.
type Phase string

const (
	// PhaseRunning: QEMU and the exporter are both alive.
	PhaseRunning Phase = "Running"
	// PhaseExited: the directory exists but a process is not running (or never started).
	PhaseExited Phase = "Exited"
	// PhaseGone: no instance directory.
	PhaseGone Phase = "Gone"
)

// Status is what Observe saw.
type Status struct {
	// Phase is the instance's state.
	Phase Phase
	// Message says, for PhaseExited, which process is not running, with its exit status when
	// recorded, and quotes the end of its log.
	Message string
	// ExporterExit and QEMUExit are the exit statuses the host recorded for a process that
	// exited; nil while it runs, when it never started, or when it died with its wrapper
	// (SIGKILL to its group), which leaves no status.
	ExporterExit, QEMUExit *int
	// Meta is the instance's metadata, nil when gone or unreadable.
	Meta *Meta
}

// Machine manages the instances on one lab host under root, through r.
type Machine struct {
	host string
	run  Runner
	root string
	// now stamps Meta.Created; a field so tests can fix it.
	now func() time.Time
}

// NewMachine returns the Machine for host (its name, for errors) reached through r, keeping
// instances under root (Parameters.Root).
func NewMachine(host string, r Runner, root string) *Machine {
	return &Machine{host: host, run: r, root: root, now: time.Now}
}

// Dir returns the instance directory root/namespace_set/name.
func (m *Machine) Dir(ref InstanceRef) (string, error) {
	if err := ref.validate(); err != nil {
		return "", err
	}
	if !path.IsAbs(m.root) || path.Clean(m.root) != m.root || m.root == "/" {
		return "", fmt.Errorf("root %q must be a clean absolute path other than /", m.root)
	}
	return path.Join(m.root, ref.Namespace+"_"+ref.Set, ref.Name), nil
}

// Create starts the instance: directory, metadata, config, QEMU, exporter. It is idempotent:
// an instance of the same UID that runs is left alone; a half-created or exited one is
// stopped and started afresh; a directory held by another UID is an error (that instance is
// an orphan for the inventory sweep, not ours to reuse).
func (m *Machine) Create(ctx context.Context, spec LaunchSpec) error {
	dir, err := m.Dir(spec.InstanceRef)
	if err != nil {
		return err
	}
	if spec.Binary == "" || len(spec.ExporterCommand) == 0 {
		return errors.New("launch spec needs a QEMU binary and an exporter command")
	}
	st, err := m.status(ctx, dir)
	if err != nil {
		return err
	}
	if st.Phase != PhaseGone {
		if st.Meta != nil && st.Meta.UID != spec.UID {
			return fmt.Errorf("lab host %q: %s belongs to UID %q, not %q", m.host, dir, st.Meta.UID, spec.UID)
		}
		if st.Phase == PhaseRunning {
			return nil
		}
		if err := m.stopDir(ctx, dir); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(Meta{Namespace: spec.Namespace, Set: spec.Set, Instance: spec.Name, UID: spec.UID, Created: m.now().UTC()})
	if err != nil {
		return err
	}
	if _, err := m.script(ctx, "prepare", prepareScript, spec.Config, dir, string(meta)); err != nil {
		return err
	}
	accel := "tcg"
	if spec.KVM {
		accel = "kvm"
	}
	qemu := append([]string{spec.Binary,
		"-name", spec.Name,
		"-display", "none",
		"-monitor", "none",
		"-qmp", "unix:" + QMPSocket + ",server=on,wait=off",
		"-accel", accel,
	}, spec.ExtraArgs...)
	exporter := append(append([]string{}, spec.ExporterCommand...), path.Join(dir, configFile))
	for _, p := range []struct {
		name string
		argv []string
	}{{"qemu", qemu}, {"exporter", exporter}} {
		if _, err := m.script(ctx, "spawn-"+p.name, spawnScript, nil, append([]string{dir, p.name}, p.argv...)...); err != nil {
			// Leave nothing half-started behind; the next Create starts over anyway.
			_ = m.stopDir(context.WithoutCancel(ctx), dir)
			return err
		}
	}
	return nil
}

// Observe reports the instance's state. It returns an error only when it cannot tell.
func (m *Machine) Observe(ctx context.Context, ref InstanceRef) (Status, error) {
	dir, err := m.Dir(ref)
	if err != nil {
		return Status{}, err
	}
	return m.status(ctx, dir)
}

// Stop ends both process groups (SIGTERM, a short grace, SIGKILL) and removes the instance
// directory. It is idempotent: a gone instance is not an error.
func (m *Machine) Stop(ctx context.Context, ref InstanceRef) error {
	dir, err := m.Dir(ref)
	if err != nil {
		return err
	}
	return m.stopDir(ctx, dir)
}

// Inventory lists the instances on the host from their metadata files, whatever their state,
// for orphan sweeping and for adopting instances after a controller restart. A metadata file
// that cannot be parsed still yields an entry with its Dir and the names its path gives, so
// it can be swept.
func (m *Machine) Inventory(ctx context.Context) ([]Meta, error) {
	out, err := m.script(ctx, "inventory", inventoryScript, nil, m.root)
	if err != nil {
		return nil, err
	}
	var metas []Meta
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), maxOutput)
	var cur *Meta
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, markMeta); ok {
			dir := path.Dir(p)
			ns, set, _ := strings.Cut(path.Base(path.Dir(dir)), "_")
			metas = append(metas, Meta{Namespace: ns, Set: set, Instance: path.Base(dir), Dir: dir})
			cur = &metas[len(metas)-1]
			continue
		}
		if cur != nil && strings.TrimSpace(line) != "" {
			var mt Meta
			if json.Unmarshal([]byte(line), &mt) == nil {
				mt.Dir = cur.Dir
				*cur = mt
			}
			cur = nil
		}
	}
	return metas, sc.Err()
}

// stopDir runs the stop script on dir.
func (m *Machine) stopDir(ctx context.Context, dir string) error {
	_, err := m.script(ctx, "stop", stopScript, nil, dir)
	return err
}

// status runs the status script on dir and parses its sections.
func (m *Machine) status(ctx context.Context, dir string) (Status, error) {
	out, err := m.script(ctx, "status", statusScript, nil, dir)
	if err != nil {
		return Status{}, err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return Status{Phase: PhaseGone}, nil
	}
	procs := map[string]string{}
	logs := map[string][]string{}
	var section, logName string
	var statusMeta *Meta
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, markProc):
			name, state, _ := strings.Cut(strings.TrimPrefix(line, markProc), " ")
			procs[name] = state
		case strings.HasPrefix(line, markMeta):
			section = "meta"
		case strings.HasPrefix(line, markLog):
			section, logName = "log", strings.TrimPrefix(line, markLog)
		case section == "meta":
			var mt Meta
			if json.Unmarshal([]byte(line), &mt) == nil {
				mt.Dir = dir
				statusMeta = &mt
			}
			section = ""
		case section == "log":
			logs[logName] = append(logs[logName], line)
		}
	}
	st := Status{Phase: PhaseRunning, Meta: statusMeta}
	var msgs []string
	for _, p := range []string{"qemu", "exporter"} {
		if procs[p] == "running" {
			continue
		}
		st.Phase = PhaseExited
		msg := p + " was never started"
		if state, code, _ := strings.Cut(procs[p], ":"); state == "exited" {
			msg = p + " exited"
			if n, err := strconv.Atoi(code); err == nil {
				msg += fmt.Sprintf(" with status %d", n)
				if p == "exporter" {
					st.ExporterExit = &n
				} else {
					st.QEMUExit = &n
				}
			}
		}
		if l := strings.TrimSpace(strings.Join(logs[p], "\n")); l != "" {
			msg += fmt.Sprintf("; last lines of %s.log: %q", p, tail(l, 1024))
		}
		msgs = append(msgs, msg)
	}
	st.Message = strings.Join(msgs, "; ")
	return st, nil
}

// script runs one of the fixed scripts as `sh -c SCRIPT NAME ARGS...` and names the script in
// a failure.
func (m *Machine) script(ctx context.Context, name, script string, stdin []byte, args ...string) ([]byte, error) {
	argv := append([]string{"sh", "-c", script, name}, args...)
	out, _, err := m.run.Run(ctx, argv, stdin)
	var ce *CommandError
	if errors.As(err, &ce) {
		ce.Host, ce.Command = m.host, name
	}
	return out, err
}
