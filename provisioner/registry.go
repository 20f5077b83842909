package provisioner

import (
	"fmt"
	"sort"
	"sync"
)

// Registry maps provisioner names to implementations. One controller can serve several
// provisioners; a class naming a provisioner that is not registered is left alone.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Provisioner
	// origin says where each name came from ("built-in", a plugin path), for error messages.
	origin map[string]string
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{m: map[string]Provisioner{}, origin: map[string]string{}}
}

// Register serves name with p. origin says where p comes from (e.g. "built-in" or a plugin
// binary path); registering a name twice is an error naming both origins.
func (r *Registry) Register(name, origin string, p Provisioner) error {
	if name == "" {
		return fmt.Errorf("provisioner from %s has an empty name", origin)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.origin[name]; ok {
		return fmt.Errorf("provisioner %q is served by both %s and %s", name, prev, origin)
	}
	r.m[name] = p
	r.origin[name] = origin
	return nil
}

// Get returns the provisioner serving name.
func (r *Registry) Get(name string) (Provisioner, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.m[name]
	return p, ok
}

// Origin returns where the provisioner serving name came from.
func (r *Registry) Origin(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.origin[name]
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Restrict keeps only the given names and returns an error naming any that is not registered,
// so a typo in a --provisioner flag fails at start.
func (r *Registry) Restrict(names []string) error {
	if len(names) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := map[string]bool{}
	for _, n := range names {
		if _, ok := r.m[n]; !ok {
			known := make([]string, 0, len(r.m))
			for k := range r.m {
				known = append(known, k)
			}
			sort.Strings(known)
			return fmt.Errorf("unknown provisioner %q (known: %v)", n, known)
		}
		keep[n] = true
	}
	for n := range r.m {
		if !keep[n] {
			delete(r.m, n)
			delete(r.origin, n)
		}
	}
	return nil
}
