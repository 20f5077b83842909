package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// Host owns the plugins Discover found. Close it on shutdown, or add it to the manager
// (mgr.Add(host)): it is a manager.Runnable that closes when the manager stops, so that no
// plugin process outlives the controller.
type Host struct {
	log     logr.Logger
	mu      sync.Mutex
	plugins []*Plugin
}

// Discover starts the plugins of dir and of Options.Reattach (else of the
// EXPORTERSET_REATTACH_PROVISIONERS variable), asks each which provisioner names it serves,
// and registers them in reg with the plugin's path as origin.
//
// Plugins are the executables in dir named exporterset-provisioner-<anything> (other files are
// ignored; an empty dir means none). A name served twice, by two plugins or by a plugin and a
// built-in registered before, is an error naming both. A reattached plugin takes the names it
// serves from a binary serving them too, so that a plugin in a debugger replaces the installed
// one without removing it.
//
// Discover tries every plugin and returns the errors of those that failed (they are not
// registered) together with a Host holding the others, so that a caller may decide to go on
// without them. Close the Host in any case.
func Discover(ctx context.Context, dir string, reg *provisioner.Registry, opts Options) (*Host, error) {
	opts = opts.withDefaults()
	h := &Host{log: opts.Logger}
	reattach := opts.Reattach
	if reattach == nil {
		var err error
		if reattach, err = wire.ParseReattachConfigs(os.Getenv(EnvReattach)); err != nil {
			return h, err
		}
	}
	var errs []error

	// Reattached plugins first: their names take precedence over binaries.
	labels := make([]string, 0, len(reattach))
	for label := range reattach {
		labels = append(labels, label)
	}
	sort.Strings(labels)
	var attached []*Plugin
	for _, label := range labels {
		p, err := newAttachedPlugin(label, reattach[label], opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		attached = append(attached, p)
	}
	reattachedNames := map[string]bool{}
	for _, p := range startAll(ctx, attached, &errs) {
		for _, name := range h.register(reg, p, nil, &errs) {
			reattachedNames[name] = true
		}
	}

	paths, err := findBinaries(dir, opts)
	if err != nil {
		errs = append(errs, err)
	}
	var binaries []*Plugin
	for _, path := range paths {
		p, err := newBinaryPlugin(path, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		binaries = append(binaries, p)
	}
	for _, p := range startAll(ctx, binaries, &errs) {
		h.register(reg, p, reattachedNames, &errs)
	}
	return h, errors.Join(errs...)
}

// startAll starts and describes plugins concurrently (each start is bounded by the start and
// call timeouts) and returns, in input order, those that started; the others' errors go to
// errs and their processes are gone.
func startAll(ctx context.Context, ps []*Plugin, errs *[]error) []*Plugin {
	results := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			if _, err := p.instance(ctx); err != nil {
				_ = p.Close()
				results[i] = err
			}
		})
	}
	wg.Wait()
	var ok []*Plugin
	for i, p := range ps {
		if results[i] != nil {
			*errs = append(*errs, results[i])
			continue
		}
		ok = append(ok, p)
	}
	return ok
}

// register registers p's names, skipping those in skip, and keeps p when it serves any; it
// returns the names registered.
func (h *Host) register(reg *provisioner.Registry, p *Plugin, skip map[string]bool, errs *[]error) []string {
	var served []string
	for _, name := range p.Info().Names {
		if skip[name] {
			h.log.Info("provisioner served by a reattached plugin; the binary's is not used", "provisioner", name, "binary", p.Origin())
			continue
		}
		if err := reg.Register(name, p.Origin(), p.Provisioner()); err != nil {
			*errs = append(*errs, err)
			continue
		}
		served = append(served, name)
	}
	if len(served) == 0 {
		_ = p.Close()
		return nil
	}
	h.mu.Lock()
	h.plugins = append(h.plugins, p)
	h.mu.Unlock()
	return served
}

// findBinaries returns the plugin executables of dir, sorted by name.
func findBinaries(dir string, opts Options) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the plugin directory: %w", err)
	}
	var paths []string
	found := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), wire.BinaryPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path) // follows symlinks, which package managers like
		if err != nil {
			opts.Logger.Info("ignoring plugin file", "path", path, "reason", err.Error())
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			opts.Logger.Info("ignoring plugin file: not an executable file", "path", path)
			continue
		}
		paths = append(paths, path)
		found[e.Name()] = true
	}
	sort.Strings(paths)
	for name := range opts.Checksums {
		if !found[name] {
			opts.Logger.Info("pinned plugin not found in the plugin directory", "plugin", name, "dir", dir)
		}
	}
	return paths, nil
}

// Plugins returns the plugins serving at least one name.
func (h *Host) Plugins() []*Plugin {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Plugin(nil), h.plugins...)
}

// Close ends every plugin process and waits for them.
func (h *Host) Close() error {
	var wg sync.WaitGroup
	for _, p := range h.Plugins() {
		wg.Go(func() { _ = p.Close() })
	}
	wg.Wait()
	return nil
}

// Start waits for ctx to end, then closes the host: as a manager.Runnable, the host's plugins
// end when the manager stops.
func (h *Host) Start(ctx context.Context) error {
	<-ctx.Done()
	return h.Close()
}

// NeedLeaderElection is false: every replica runs plugins, and each must clean up its own.
func (h *Host) NeedLeaderElection() bool { return false }
