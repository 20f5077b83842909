package jumpsim

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// cachedMapper is the dynamic REST mapper remembering the mappings it found: every client
// call asks for one (is the kind namespaced?), and the lookup was a tenth of the
// Simulator's CPU in a large scale-up, CPU the controller under test then lacked. The
// kinds the Simulator handles do not change scope while it runs; misses are not remembered.
type cachedMapper struct {
	meta.RESTMapper
	mappings sync.Map // group/kind/versions -> *meta.RESTMapping
}

func newCachedMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &cachedMapper{RESTMapper: m}, nil
}

// RESTMapping returns the remembered mapping of gk and versions, else asks the dynamic mapper.
func (m *cachedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.Group + "/" + gk.Kind + "/" + strings.Join(versions, ",")
	if v, ok := m.mappings.Load(key); ok {
		return v.(*meta.RESTMapping), nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mappings.Store(key, mapping)
	}
	return mapping, err
}
