package jumpsim

import (
	"testing"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// controller-runtime's informers log through its process-wide logger, whatever the
	// manager's logger is; unset, it prints a warning with a stack trace after 30 seconds.
	logf.SetLogger(logr.New(discardSink{}))
	testenv.Main(m, &env)
}
